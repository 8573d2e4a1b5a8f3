import type { Db } from '../db/knex.js';

/** Records that `job` runs for `slot`; false when some process already did (the primary key refuses a second row). */
export async function recordJobRun(db: Db, run: { job: string; slot: string; started_at: string }): Promise<boolean> {
  const inserted = await db('job_runs').insert(run).onConflict(['job', 'slot']).ignore().returning('job');
  return inserted.length === 1;
}

/** Forgets runs that started before `before`. */
export async function pruneJobRuns(db: Db, before: string): Promise<number> {
  return db('job_runs').where('started_at', '<', before).delete();
}
