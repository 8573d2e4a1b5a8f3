import type { Db } from '../db/knex.js';
import { atomically } from '../db/group-commit.js';
import { dialectOf } from '../db/dialect.js';
import { appendDelta, appendStatusEvents, appendStreamEvent, appendStreamEvents, appendStreamEventsOf, insertedId, moveEvents, type StreamEventData } from '../streams/queries.js';
import { anyDue, claimPicked, type ClaimPick, type LeaseTerms, type Queue } from '../db/claims.js';
import { bringRunTurnsForward, lapsed, runEnded, runsEnded } from '../scribes/queries.js';
import { insertRowsReturning, piecesOf, updateFromValues } from '../db/rows.js';
import { groupBy } from '../lib/group-by.js';

export const SESSION_STATES = ['queued', 'running', 'waiting', 'completed', 'failed', 'cancelled'] as const;
export type SessionState = (typeof SESSION_STATES)[number];
/** A session still open: it may be cancelled. `completed`, `failed` and `cancelled` are closed. */
export const OPEN_SESSION_STATES = ['queued', 'running', 'waiting'] as const satisfies readonly SessionState[];
export const MESSAGE_AUTHORS = ['user', 'scribe', 'staff', 'system'] as const;
export type MessageAuthor = (typeof MESSAGE_AUTHORS)[number];

export interface SessionRow {
  id: string;
  organization_id: string;
  scribe_id: string;
  state: SessionState;
  reply_due: boolean | number;
  error_message: string | null;
  claim_token: string | null;
  lease_until: string | null;
  attempts: number;
  /** When staff marked its failure as dealt with. */
  discarded_at?: string | null;
  created_at: string;
  updated_at: string;
}

export interface MessageRow {
  id: number;
  session_id: string;
  author: MessageAuthor;
  text: string;
  /** The scribe's answer under way: it grows as the model writes it (at most one a session). */
  partial: boolean | number;
  created_at: string;
}

/** A message as it is added: whole. */
export type NewMessage = Omit<MessageRow, 'id' | 'session_id' | 'partial'>;

/**
 * Adds a message to a transcript, and its event for the API's streams unless it is a system
 * note or a draft (`streamed: false`: the caller tells it, with the move it belongs to); its id.
 */
export async function insertMessage(trx: Db, sessionId: string, message: NewMessage & { partial?: boolean }, { streamed = true } = {}): Promise<number> {
  const id = insertedId(
    await trx('session_messages')
      .insert({ ...message, session_id: sessionId })
      .returning('id'),
  );
  if (streamed && message.author !== 'system' && !message.partial) await appendStreamEvent(trx, sessionId, { kind: 'message', data: { message_id: id } }, message.created_at);
  return id;
}

/** An answer's rows for the session's stream (`moveEvents`): its state, with the message unless a system note; `drafted`: what its draft held. */
function answeredEvents(state: string, outcome: Pick<SessionAnswer, 'author' | 'text'>, messageId: number, drafted = ''): StreamEventData[] {
  if (outcome.author === 'system') return moveEvents(state);
  return moveEvents(state, { id: messageId, text: outcome.text, drafted: outcome.author === 'scribe' ? drafted : undefined });
}

/** The session's state as its stream tells it: recorded after each change of state (and after each answer). */
export async function recordSessionStatus(trx: Db, sessionId: string, at: string, known?: SessionState): Promise<void> {
  const state = known ?? ((await trx('sessions').where({ id: sessionId }).first('state')) as { state: SessionState }).state;
  await appendStreamEvent(trx, sessionId, { kind: 'status', data: { status: state } }, at);
}

export async function insertSession(db: Db, session: SessionRow, message: NewMessage, alongside?: (trx: Db) => Promise<void>): Promise<void> {
  await db.transaction(async (trx) => {
    await trx('sessions').insert(session);
    if (session.reply_due) await bringRunTurnsForward(trx, [session.scribe_id], session.created_at);
    await recordSessionStatus(trx, session.id, message.created_at);
    await insertMessage(trx, session.id, message);
    await alongside?.(trx);
  });
}

export async function findSession(db: Db, organizationId: string, id: string): Promise<SessionRow | undefined> {
  return db<SessionRow>('sessions').where({ id, organization_id: organizationId }).first();
}

export async function findSessionById(db: Db, id: string): Promise<SessionRow | undefined> {
  return db<SessionRow>('sessions').where({ id }).first();
}

export async function findMessages(db: Db, sessionId: string): Promise<MessageRow[]> {
  return db<MessageRow>('session_messages').where({ session_id: sessionId }).orderBy('id');
}

/** A scribe's sessions, newest first, each with its first message (for lists). */
export async function listSessionsOfScribe(db: Db, scribeId: string, limit: number): Promise<Array<SessionRow & { first_message: string | null }>> {
  return db('sessions as s')
    .where('s.scribe_id', scribeId)
    .select('s.*', db('session_messages as m').where('m.session_id', db.ref('s.id')).orderBy('m.id').limit(1).select('m.text').as('first_message'))
    .orderBy([
      { column: 's.created_at', order: 'desc' },
      { column: 's.id', order: 'desc' },
    ])
    .limit(limit);
}

/** Adds a message and asks for the scribe's answer, if the session is in state `from`; false otherwise. */
export async function appendMessageAwaitingReply(db: Db, sessionId: string, from: SessionState, message: NewMessage): Promise<boolean> {
  return db.transaction(async (trx) => {
    const [queued] = await trx('sessions')
      .where({ id: sessionId, state: from })
      .update({ state: 'queued', reply_due: true, error_message: null, discarded_at: null, updated_at: message.created_at })
      .returning(['scribe_id']);
    if (!queued) return false;
    await bringRunTurnsForward(trx, [queued.scribe_id], message.created_at);
    await recordSessionStatus(trx, sessionId, message.created_at);
    await insertMessage(trx, sessionId, message);
    return true;
  });
}

/**
 * Adds a user's message to an open session, owing it an answer: a `waiting` session is
 * `queued` again; a `queued` or `running` one keeps its state, and an answer under way is
 * followed by another (`recordSessionAnswers` sees the newer message). False when the session is closed.
 */
export async function addUserMessage(db: Db, sessionId: string, message: NewMessage, alongside?: (trx: Db) => Promise<unknown>): Promise<boolean> {
  return db.transaction(async (trx) => {
    const [row] = await trx('sessions')
      .where({ id: sessionId })
      .whereIn('state', OPEN_SESSION_STATES)
      .update({ state: trx.raw("case when state = 'waiting' then 'queued' else state end"), reply_due: true, updated_at: message.created_at })
      .returning(['scribe_id']);
    if (!row) return false;
    await bringRunTurnsForward(trx, [row.scribe_id], message.created_at);
    await insertMessage(trx, sessionId, message);
    await recordSessionStatus(trx, sessionId, message.created_at);
    await alongside?.(trx);
    return true;
  });
}

/** Marks a failed session as dealt with; false when it is not failed or already discarded. */
export async function discardSession(db: Db, organizationId: string, id: string, at: string): Promise<boolean> {
  const updated = await db('sessions').where({ id, organization_id: organizationId, state: 'failed' }).whereNull('discarded_at').update({ discarded_at: at });
  return updated === 1;
}

/** The transcripts of several sessions, each in order. */
export async function findMessagesOfSessions(db: Db, sessionIds: readonly string[]): Promise<Map<string, MessageRow[]>> {
  const rows = sessionIds.length ? await db<MessageRow>('session_messages').whereIn('session_id', sessionIds).orderBy('id') : [];
  return groupBy(rows, (row) => row.session_id, sessionIds);
}

/**
 * Cancels an open session: `cancelled`, owing no reply, its claim cleared so an answer under
 * way records nothing, with `message` (a system note of who cancelled it) added. False when
 * it was closed already.
 */
export async function cancelSession(db: Db, id: string, message: { text: string; created_at: string }, alongside?: (trx: Db) => Promise<unknown>): Promise<boolean> {
  for (;;) {
    const session = await db<SessionRow>('sessions').where({ id }).first('state', 'claim_token');
    if (!session || !(OPEN_SESSION_STATES as readonly string[]).includes(session.state)) return false;
    const cancelled = await db.transaction(async (trx) => {
      // Guarded by the claim read too, so a claimed session's run is counted as ended exactly once.
      const [row] = await trx('sessions')
        .where({ id, state: session.state, claim_token: session.claim_token })
        .update({ state: 'cancelled', reply_due: false, claim_token: null, lease_until: null, updated_at: message.created_at })
        .returning(['scribe_id']);
      if (!row) return false;
      if (session.claim_token !== null) await runEnded(trx, row.scribe_id, message.created_at);
      // The answer under way is not recorded: what the model had written of it goes.
      await trx('session_messages').where({ session_id: id, partial: true }).delete();
      await insertMessage(trx, id, { author: 'system', ...message });
      await recordSessionStatus(trx, id, message.created_at);
      await alongside?.(trx);
      return true;
    });
    if (cancelled) return true;
  }
}

/** Sessions owing an answer and waiting for a claim, by scribe. */
const unclaimedSessions: Queue = {
  table: 'sessions',
  index: 'sessions_unclaimed_by_scribe',
  due: (q) => q.whereRaw('reply_due').whereNull('claim_token'),
  order: ['created_at', 'id'],
  leaseColumn: 'lease_until',
};
/** Claimed sessions whose lease ran out. */
const lapsedSessions: Queue = { table: 'sessions', index: 'sessions_claimed', due: lapsed('sessions'), order: ['lease_until', 'id'], leaseColumn: 'lease_until' };

/** Whether any session waits unclaimed (a subquery for `exists`). */
export const sessionsWaiting = (db: Db, now: string) => anyDue(db, unclaimedSessions, now);

/** Claims the sessions `pick` names for answers (runtime/queries.ts), in the caller's transaction: `running`, unless one was ended at once (it stays `completed`). */
export async function claimSessions(trx: Db, terms: LeaseTerms, pick: ClaimPick): Promise<SessionRow[]> {
  const rows = await claimPicked<SessionRow>(trx, { unclaimed: unclaimedSessions, lapsed: lapsedSessions }, pick, {
    now: terms.now,
    set: {
      claim_token: terms.token,
      lease_until: terms.leaseUntil,
      attempts: trx.raw('attempts + 1'),
      state: trx.raw("case when state = 'queued' then 'running' else state end"),
      updated_at: trx.raw('case when updated_at < ? then ? else updated_at end', [terms.now, terms.now]),
    },
  });
  // Each claimed session's status as its stream tells it, running, one statement for all. A
  // session ended at once stays completed: no change to tell until its answer is recorded.
  for (const state of new Set(rows.map((row) => row.state).filter((state) => state !== 'completed'))) {
    await appendStatusEvents(
      trx,
      'sessions',
      rows.filter((row) => row.state === state).map((row) => row.id),
      state,
      terms.now,
    );
  }
  return rows;
}

/** How a claimed session's turn ends (`recordSessionAnswers`). */
export interface SessionAnswer {
  author: 'scribe' | 'system';
  text: string;
  end: boolean;
  errorMessage: string | null;
  /** The last message the answer saw: a later one from the user or staff is owed an answer of its own. */
  answeredUpTo?: number;
  /** The caller knows the session has no answer under way (a run: none at its claim, none saved since): not looked for. */
  noDraft?: boolean;
}

/** More writes that belong to a session's answer (its webhook event), in its transaction, given the state it left. */
export type AlongsideAnswer = (trx: Db, state: 'waiting' | 'completed' | 'failed' | 'queued') => Promise<unknown>;

/** A session's answer as a batch records it (`recordSessionAnswers`). */
export interface AnswerToRecord {
  claim: { id: string; token: string };
  outcome: SessionAnswer;
  at: string;
  alongside?: AlongsideAnswer;
}

/**
 * `recordSessionAnswer` for the answers of many runs at once, in the caller's transaction (a
 * batch of runs' writes, runtime/run-writes.ts): a statement for all of them at each step (the
 * newer messages looked for, the sessions moved, the scribe's messages, their stream events),
 * where one each would take five round trips an answer. An answer that completes a message
 * written as it came, or that a newer message follows (its session is owed the next answer),
 * is recorded on its own (`recordSessionAnswer`). Whether each was recorded (false: its claim went).
 */
export async function recordSessionAnswers(trx: Db, answers: readonly AnswerToRecord[]): Promise<boolean[]> {
  // Writes before it reads: on SQLite a transaction that read first cannot then write past another process's write.
  await dialectOf(trx).writeFirst(trx, 'sessions', 'reply_due');
  const recorded = new Map<string, boolean>();
  // A message that came while the scribe answered (the API's further messages) is answered next.
  const asksMore = (a: AnswerToRecord) => a.outcome.errorMessage === null && a.outcome.answeredUpTo !== undefined;
  const last = await lastMessagesFrom(
    trx,
    answers.filter(asksMore).map((a) => a.claim.id),
  );
  const followed = (a: AnswerToRecord) => asksMore(a) && (last.get(a.claim.id) ?? 0) > a.outcome.answeredUpTo!;
  const together: AnswerToRecord[] = [];
  for (const a of answers) {
    const more = followed(a);
    if (a.outcome.noDraft && !more) together.push(a);
    else recorded.set(a.claim.id, await recordSessionAnswer(trx, a, more));
  }
  for (const piece of piecesOf(trx, together, ANSWERS_PER_UPDATE)) {
    const byId = new Map(piece.map((a) => [a.claim.id, a]));
    const ids = [...byId.keys()];
    const rows = await updateFromValues<{ id: string; scribe_id: string; state: SessionState }>(trx, 'sessions', {
      names: ['id', 'claim_token', 'state', 'error_message', 'updated_at'],
      rows: [...byId.values()].map((a) => [a.claim.id, a.claim.token, stateAfter(a.outcome), a.outcome.errorMessage, a.at]),
      // A session ended at once stays completed, even if answering it failed. The token is compared as text (a uuid on PostgreSQL).
      set: "reply_due = false, claim_token = null, lease_until = null, attempts = 0, state = case when sessions.state = 'completed' then 'completed' else v.state end, error_message = v.error_message, updated_at = v.updated_at",
      where: 'cast(sessions.claim_token as varchar(36)) = v.claim_token',
      returning: ['id', 'scribe_id', 'state'],
    });
    await runsEnded(
      trx,
      rows.map((row) => ({ scribeId: row.scribe_id, at: byId.get(row.id)!.at })),
    );
    const messages = await insertRowsReturning<{ id: number | string; session_id: string }>(
      trx,
      'session_messages',
      rows.map((row) => {
        const { outcome, at } = byId.get(row.id)!;
        return { session_id: row.id, author: outcome.author, text: outcome.text, created_at: at };
      }),
      ['id', 'session_id'],
    );
    const messageOf = new Map(messages.map((m) => [m.session_id, Number(m.id)]));
    await appendStreamEventsOf(
      trx,
      rows.map((row) => {
        const { outcome, at } = byId.get(row.id)!;
        return { subjectId: row.id, events: answeredEvents(row.state, outcome, messageOf.get(row.id)!), at };
      }),
    );
    for (const row of rows) await byId.get(row.id)!.alongside?.(trx, row.state as 'waiting' | 'completed' | 'failed');
    const moved = new Set(rows.map((row) => row.id));
    for (const id of ids) recorded.set(id, moved.has(id));
  }
  return answers.map((a) => recorded.get(a.claim.id)!);
}

/** Answers moved in one UPDATE at most. */
const ANSWERS_PER_UPDATE = 64;

/** Of each session, the id of the last whole message from the user or staff. */
async function lastMessagesFrom(trx: Db, sessionIds: readonly string[]): Promise<Map<string, number>> {
  if (sessionIds.length === 0) return new Map();
  const rows: Array<{ session_id: string; last: number | string }> = await trx('session_messages')
    .whereIn('session_id', sessionIds)
    .where({ partial: false })
    .whereIn('author', ['user', 'staff'])
    .groupBy('session_id')
    .select('session_id', trx.raw('max(id) as last'));
  return new Map(rows.map((row) => [row.session_id, Number(row.last)]));
}

/** The state an answer leaves its session in, unless a newer message is owed the next answer (`queued`). */
function stateAfter(outcome: SessionAnswer): 'waiting' | 'completed' | 'failed' {
  return outcome.errorMessage !== null ? 'failed' : outcome.end ? 'completed' : 'waiting';
}

/**
 * One answer of `recordSessionAnswers`, on its own: one that completes its message under way,
 * or that a newer message follows (`more`: its session is `queued` again, owed the next
 * answer). False if the claim was lost.
 */
async function recordSessionAnswer(trx: Db, { claim, outcome, at, alongside }: AnswerToRecord, more: boolean): Promise<boolean> {
  const [row] = await trx('sessions')
    .where({ id: claim.id, claim_token: claim.token })
    .update({
      reply_due: more,
      claim_token: null,
      lease_until: null,
      attempts: 0,
      // A session ended at once stays completed, even if answering it failed.
      state: trx.raw("case when state = 'completed' then 'completed' else ? end", [more ? 'queued' : stateAfter(outcome)]),
      error_message: outcome.errorMessage,
      updated_at: at,
    })
    .returning(['scribe_id', 'state']);
  if (!row) return false;
  // Its turn, if owed the next answer, comes with the group's count of runs ended, not before it (scribes/queries.ts, `runsEnded`).
  await runsEnded(trx, [{ scribeId: row.scribe_id, at, due: more }]);
  // The scribe's answer completes its message under way, if it was written as it came; a failure note replaces it.
  const draft = () => trx('session_messages').where({ session_id: claim.id, partial: true });
  const written = outcome.author === 'scribe' && !outcome.noDraft ? ((await draft().first('id', 'text')) as { id: number; text: string } | undefined) : undefined;
  let id: number;
  if (written) {
    await draft().update({ text: outcome.text, partial: false, created_at: at });
    id = Number(written.id);
  } else {
    if (!outcome.noDraft) await draft().delete();
    id = await insertMessage(trx, claim.id, { author: outcome.author, text: outcome.text, created_at: at }, { streamed: false });
  }
  // Streams get the rest of the text the last save had not stored, the message whole, then the state.
  await appendStreamEvents(trx, claim.id, answeredEvents(row.state, outcome, id, written?.text), at);
  await alongside?.(trx, row.state);
  return true;
}

/**
 * Stores `text` as the scribe's answer under way (the session's one partial message: added at
 * the first text, then rewritten whole; '' removes it), if `claim` still holds the session.
 * False when it does not: the run was cancelled, handed back or taken over.
 */
export async function saveDraftMessage(db: Db, claim: { id: string; token: string }, text: string, at: string): Promise<boolean> {
  return atomically(db, async (trx) => {
    // The claimed row is written first: that holds it (PostgreSQL) or the database (SQLite) to
    // the commit, so a cancel or a hand-back waits for this write, then removes what it wrote.
    const held = await trx('sessions').where({ id: claim.id, claim_token: claim.token }).update({ claim_token: claim.token });
    if (held === 0) return false;
    const draft = () => trx('session_messages').where({ session_id: claim.id, partial: true });
    const before = (await draft().first('id', 'text')) as { id: number; text: string } | undefined;
    if (text === '') await draft().delete();
    else if (before) await draft().update({ text });
    const messageId = before ? Number(before.id) : text === '' ? 0 : await insertMessage(trx, claim.id, { author: 'scribe', text, partial: true, created_at: at });
    await appendDelta(trx, claim.id, messageId, before?.text ?? '', text, at);
    return true;
  });
}
