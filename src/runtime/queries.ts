import type { Db } from '../db/knex.js';
import { atOrAfter } from '../lib/clock.js';
import type { SessionRow } from '../sessions/queries.js';
import { insertTaskEvent, type WorkedTaskRow } from '../tasks/queries.js';

/** A claim: exclusive until `leaseUntil`, after which another worker may take the work over. */
export interface ClaimTerms {
  token: string;
  now: string;
  leaseUntil: string;
}

export interface Candidate {
  id: string;
  scribe_id: string;
}

/** Free, or claimed by a worker whose lease ran out (it crashed or hung). */
const unclaimed = (table: string, now: string) => (q: import('knex').Knex.QueryBuilder) =>
  q.whereNull(`${table}.claim_token`).orWhere(`${table}.lease_until`, '<=', now);

/** What makes each kind of work due; both conditions match their table's partial index exactly. */
const DUE = {
  sessions: 'reply_due', // sessions_reply_queue
  tasks: "status in ('open', 'in_progress')", // tasks_work_queue (in_progress: left by a crash)
} as const;

/** Due sessions or tasks of active scribes that no live claim holds, oldest first. */
export async function dueWork(db: Db, table: keyof typeof DUE, now: string, limit: number): Promise<Candidate[]> {
  return db(`${table} as w`)
    .join('scribes as c', 'c.id', 'w.scribe_id')
    .whereRaw(`w.${DUE[table]}`)
    .where('c.state', 'active')
    .where(unclaimed('w', now))
    .orderBy('w.created_at')
    .limit(limit)
    .select('w.id', 'w.scribe_id');
}

/** Takes a due session; `running` unless it was ended at once (it stays `completed`). Undefined if another worker was first. */
export async function claimSession(db: Db, id: string, terms: ClaimTerms): Promise<SessionRow | undefined> {
  const [row] = await db<SessionRow>('sessions')
    .where({ id })
    .whereRaw('reply_due')
    .where(unclaimed('sessions', terms.now))
    .update({
      claim_token: terms.token,
      lease_until: terms.leaseUntil,
      attempts: db.raw('attempts + 1'),
      state: db.raw("case when state = 'queued' then 'running' else state end"),
      updated_at: db.raw('case when updated_at < ? then ? else updated_at end', [terms.now, terms.now]),
    })
    .returning('*');
  return row;
}

/** Takes a due task and moves it to `in_progress` (recording the move when it was `open`). */
export async function claimTask(db: Db, id: string, terms: ClaimTerms): Promise<WorkedTaskRow | undefined> {
  return db.transaction(async (trx) => {
    const before = await trx<WorkedTaskRow>('tasks').where({ id }).first('status', 'updated_at');
    if (!before) return undefined;
    const at = atOrAfter(new Date(terms.now), before.updated_at);
    const [row] = await trx<WorkedTaskRow>('tasks')
      .where({ id, status: before.status })
      .whereIn('status', ['open', 'in_progress'])
      .where(unclaimed('tasks', terms.now))
      .update({ claim_token: terms.token, lease_until: terms.leaseUntil, attempts: trx.raw('attempts + 1'), status: 'in_progress', updated_at: at })
      .returning('*');
    if (row && before.status === 'open') {
      await insertTaskEvent(trx, { task_id: id, from_status: 'open', to_status: 'in_progress', author: 'scribe', text: null, created_at: at });
    }
    return row;
  });
}

/** Ends a claimed session's turn: the scribe's message, then `waiting` (or `completed`); false if the claim was lost. */
export async function finishSession(
  db: Db,
  claim: { id: string; token: string },
  outcome: { author: 'scribe' | 'system'; text: string; end: boolean; errorMessage: string | null },
  at: string,
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
    await trx('session_messages').insert({ session_id: claim.id, author: outcome.author, text: outcome.text, created_at: at });
    return true;
  });
}

/** Gives claimed work back at once (the process is stopping), so the next start picks it up. */
export async function releaseClaim(db: Db, table: 'sessions' | 'tasks', claim: { id: string; token: string }): Promise<void> {
  await db(table).where({ id: claim.id, claim_token: claim.token }).update({ claim_token: null, lease_until: null });
}
