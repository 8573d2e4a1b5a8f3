import type { Db } from '../db/knex.js';
import { claimPicked, type ClaimPick, type LeaseTerms, type Queue } from '../db/claims.js';
import { bringRunTurnsForward, lapsed, runEnded } from '../scribes/queries.js';

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
  created_at: string;
}

export async function insertSession(
  db: Db,
  session: SessionRow,
  message: Omit<MessageRow, 'id' | 'session_id'>,
  alongside?: (trx: Db) => Promise<void>,
): Promise<void> {
  await db.transaction(async (trx) => {
    await trx('sessions').insert(session);
    if (session.reply_due) await bringRunTurnsForward(trx, [session.scribe_id], session.created_at);
    await trx('session_messages').insert({ ...message, session_id: session.id });
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
    .orderBy([{ column: 's.created_at', order: 'desc' }, { column: 's.id', order: 'desc' }])
    .limit(limit);
}

/** Adds a message and asks for the scribe's answer, if the session is in state `from`; false otherwise. */
export async function appendMessageAwaitingReply(
  db: Db,
  sessionId: string,
  from: SessionState,
  message: Omit<MessageRow, 'id' | 'session_id'>,
): Promise<boolean> {
  return db.transaction(async (trx) => {
    const [queued] = await trx('sessions')
      .where({ id: sessionId, state: from })
      .update({ state: 'queued', reply_due: true, error_message: null, discarded_at: null, updated_at: message.created_at })
      .returning(['scribe_id']);
    if (!queued) return false;
    await bringRunTurnsForward(trx, [queued.scribe_id], message.created_at);
    await trx('session_messages').insert({ ...message, session_id: sessionId });
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
  const bySession = new Map<string, MessageRow[]>(sessionIds.map((id) => [id, []]));
  for (const row of rows) bySession.get(row.session_id)!.push(row);
  return bySession;
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
      await trx('session_messages').insert({ session_id: id, author: 'system', ...message });
      await alongside?.(trx);
      return true;
    });
    if (cancelled) return true;
  }
}

/** Sessions owing an answer and waiting for a claim, by scribe (sessions_unclaimed_by_scribe). */
const unclaimedSessions: Queue = { table: 'sessions', due: (q) => q.whereRaw('reply_due').whereNull('claim_token'), order: ['created_at', 'id'], leaseColumn: 'lease_until' };
/** Claimed sessions whose lease ran out (sessions_claimed). */
const lapsedSessions: Queue = { table: 'sessions', due: lapsed('sessions'), order: ['lease_until', 'id'], leaseColumn: 'lease_until' };

/** Claims the sessions `pick` names for answers (runtime/queries.ts), in the caller's transaction: `running`, unless one was ended at once (it stays `completed`). */
export async function claimSessions(trx: Db, terms: LeaseTerms, pick: ClaimPick): Promise<SessionRow[]> {
  return claimPicked<SessionRow>(trx, { unclaimed: unclaimedSessions, lapsed: lapsedSessions }, pick, {
    now: terms.now,
    set: {
      claim_token: terms.token,
      lease_until: terms.leaseUntil,
      attempts: trx.raw('attempts + 1'),
      state: trx.raw("case when state = 'queued' then 'running' else state end"),
      updated_at: trx.raw('case when updated_at < ? then ? else updated_at end', [terms.now, terms.now]),
    },
  });
}

/** Ends a claimed session's turn: the scribe's message, then `waiting` (or `completed`, or `failed` with `errorMessage`); false if the claim was lost. */
export async function finishSession(
  db: Db,
  claim: { id: string; token: string },
  outcome: { author: 'scribe' | 'system'; text: string; end: boolean; errorMessage: string | null },
  at: string,
  /** More writes that belong to the answer (its webhook event), in its transaction, given the state it left. */
  alongside?: (trx: Db, state: 'waiting' | 'completed' | 'failed') => Promise<unknown>,
): Promise<boolean> {
  const next = outcome.errorMessage !== null ? 'failed' : outcome.end ? 'completed' : 'waiting';
  return db.transaction(async (trx) => {
    const [row] = await trx('sessions')
      .where({ id: claim.id, claim_token: claim.token })
      .update({
        reply_due: false,
        claim_token: null,
        lease_until: null,
        attempts: 0,
        // A session ended at once stays completed, even if answering it failed.
        state: trx.raw("case when state = 'completed' then 'completed' else ? end", [next]),
        error_message: outcome.errorMessage,
        updated_at: at,
      })
      .returning(['scribe_id', 'state']);
    if (!row) return false;
    await runEnded(trx, row.scribe_id, at);
    await trx('session_messages').insert({ session_id: claim.id, author: outcome.author, text: outcome.text, created_at: at });
    await alongside?.(trx, row.state);
    return true;
  });
}
