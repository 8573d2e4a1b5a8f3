import type { Knex } from 'knex';
import type { Db } from '../db/knex.js';
import { claimDue, renewLeases, type Queue } from '../db/claims.js';
import { atOrAfter } from '../lib/clock.js';
import type { SessionRow } from '../sessions/queries.js';
import { insertTaskEvent, type WorkedTaskRow } from '../tasks/queries.js';

/** A claim: exclusive until `leaseUntil` unless renewed, after which another worker may take the work over. */
export interface ClaimTerms {
  token: string;
  now: string;
  leaseUntil: string;
}

/** Free, or claimed by a worker whose lease ran out (it died, or its event loop stopped). */
const unclaimed = (table: string, now: string) => (q: Knex.QueryBuilder) => q.whereNull(`${table}.claim_token`).orWhere(`${table}.lease_until`, '<=', now);

/** Work of scribes that are on: a powered-off scribe's work waits. */
const ofActiveScribe = (table: string) => (q: Knex.QueryBuilder) =>
  q.whereExists((scribes) => scribes.select(scribes.client.raw('1')).from('scribes as c').whereRaw('c.id = ??', [`${table}.scribe_id`]).where('c.state', 'active'));

/** Each kind of work's queue (db/claims.ts); the due conditions match their table's partial index exactly. */
export const workQueues = {
  sessions: {
    table: 'sessions',
    // sessions_reply_queue: (created_at, id), where reply_due.
    due: (q, now) => q.whereRaw('reply_due').where(unclaimed('sessions', now)).where(ofActiveScribe('sessions')),
    order: ['created_at', 'id'],
    leaseColumn: 'lease_until',
  },
  tasks: {
    table: 'tasks',
    // tasks_work_queue: (created_at, id), where status in ('open', 'in_progress') (in_progress: left by a crash).
    due: (q, now) => q.whereRaw("status in ('open', 'in_progress')").where(unclaimed('tasks', now)).where(ofActiveScribe('tasks')),
    order: ['created_at', 'id'],
    leaseColumn: 'lease_until',
  },
} satisfies Record<string, Queue>;

/**
 * Passes over the work of scribes that already have enough under way (`scribeIds`): takes only
 * the oldest due piece of each other active scribe, one seek per scribe in the queue's
 * `_by_scribe` index, since a filter on the whole queue would read past every due row of
 * the busy scribes, on each claim.
 */
const notOf = (db: Db, queue: Queue, scribeIds: readonly string[], now: string) => (q: Knex.QueryBuilder) => {
  if (scribeIds.length === 0) return;
  const next = db(queue.table).select('id').whereRaw('??.scribe_id = s.id', [queue.table]).orderBy([...queue.order]).limit(1);
  queue.due(next, now);
  q.whereIn('id', db('scribes as s').where('s.state', 'active').whereNotIn('s.id', scribeIds).select(next.as('next_id')));
};

/** Takes the oldest due session, `running` unless it was ended at once (it stays `completed`); undefined when none is due. */
export async function claimNextSession(db: Db, terms: ClaimTerms, skipScribes: readonly string[] = []): Promise<SessionRow | undefined> {
  const [row] = await claimDue<SessionRow>(db, workQueues.sessions, {
    now: terms.now,
    limit: 1,
    only: notOf(db, workQueues.sessions, skipScribes, terms.now),
    set: {
      claim_token: terms.token,
      lease_until: terms.leaseUntil,
      attempts: db.raw('attempts + 1'),
      state: db.raw("case when state = 'queued' then 'running' else state end"),
      updated_at: db.raw('case when updated_at < ? then ? else updated_at end', [terms.now, terms.now]),
    },
  });
  return row;
}

/** Takes the oldest due task and moves it to `in_progress` (recording the move when it was `open`); undefined when none is due. */
export async function claimNextTask(db: Db, terms: ClaimTerms, skipScribes: readonly string[] = []): Promise<WorkedTaskRow | undefined> {
  return db.transaction(async (trx) => {
    const [claimed] = await claimDue<WorkedTaskRow>(trx, workQueues.tasks, {
      now: terms.now,
      limit: 1,
      only: notOf(trx, workQueues.tasks, skipScribes, terms.now),
      set: { claim_token: terms.token, lease_until: terms.leaseUntil, attempts: trx.raw('attempts + 1') },
    });
    if (!claimed || claimed.status === 'in_progress') return claimed;
    const at = atOrAfter(new Date(terms.now), claimed.updated_at);
    const [row] = await trx<WorkedTaskRow>('tasks').where({ id: claimed.id }).update({ status: 'in_progress', updated_at: at }).returning('*');
    await insertTaskEvent(trx, { task_id: claimed.id, from_status: 'open', to_status: 'in_progress', author: 'scribe', text: null, created_at: at });
    return row;
  });
}

/** Extends the lease of work still claimed by `token`; false when the claim was taken over. */
export async function renewWorkLease(db: Db, table: keyof typeof workQueues, claim: { id: string; token: string }, leaseUntil: string): Promise<boolean> {
  return (await renewLeases(db, workQueues[table], { ids: [claim.id], token: claim.token }, leaseUntil)) === 1;
}

/** Ends a claimed session's turn: the scribe's message, then `waiting` (or `completed`); false if the claim was lost. */
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
    const updated = await trx('sessions')
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
      });
    if (updated === 0) return false;
    // The scribe's answer completes its message under way, if it was written as it came; a failure note replaces it.
    const draft = () => trx('session_messages').where({ session_id: claim.id, partial: true });
    let completed = 0;
    if (outcome.author === 'scribe') completed = await draft().update({ text: outcome.text, partial: false, created_at: at });
    else await draft().delete();
    if (completed === 0) await trx('session_messages').insert({ session_id: claim.id, author: outcome.author, text: outcome.text, created_at: at });
    if (alongside) {
      const { state } = (await trx('sessions').where({ id: claim.id }).first('state')) as { state: 'waiting' | 'completed' | 'failed' };
      await alongside(trx, state);
    }
    return true;
  });
}

/** Where each kind of work keeps the answer under way: its one partial row. */
const drafts = { sessions: ['session_messages', 'session_id'], tasks: ['task_events', 'task_id'] } as const;

/**
 * Gives claimed work back at once (the process is stopping), so the next start picks it up,
 * afresh: what the run had written of its answer goes.
 */
export async function releaseClaim(db: Db, table: 'sessions' | 'tasks', claim: { id: string; token: string }): Promise<void> {
  await db.transaction(async (trx) => {
    const released = await trx(table).where({ id: claim.id, claim_token: claim.token }).update({ claim_token: null, lease_until: null });
    const [drafted, of] = drafts[table];
    if (released > 0) await trx(drafted).where({ [of]: claim.id, partial: true }).delete();
  });
}

/** Which of the ids are of work cancelled meanwhile: a task `cancelled`, a session `cancelled`. */
export async function findCancelled(db: Db, ids: { sessions: readonly string[]; tasks: readonly string[] }): Promise<string[]> {
  const [sessions, tasks] = await Promise.all([
    ids.sessions.length > 0 ? db('sessions').whereIn('id', ids.sessions).where({ state: 'cancelled' }).pluck('id') : [],
    ids.tasks.length > 0 ? db('tasks').whereIn('id', ids.tasks).where({ status: 'cancelled' }).pluck('id') : [],
  ]);
  return [...sessions, ...tasks] as string[];
}
