import type { Db } from '../db/knex.js';
import type { Clock } from '../lib/clock.js';
import type { Job } from './scheduler.js';
import { pruneJobRuns, recordJobRun } from './queries.js';

const DAY_MS = 86_400_000;
/** Runs are remembered this long: far longer than any job's period. */
const KEEP_RUNS_MS = 7 * DAY_MS;

/**
 * Makes a periodic job run once per database, whichever of the processes on it fire: each
 * fire falls in a slot of `periodMs` (its schedule's period), and only the process that
 * records the (job, slot) row first runs it, as solid_queue does for recurring tasks.
 * Processes whose clocks differ by less than the period agree on the slot.
 */
export function oncePerDatabase(db: Db, clock: Clock, job: Job, periodMs: number): Job {
  return {
    ...job,
    async run() {
      const now = clock().getTime();
      const slot = new Date(Math.floor(now / periodMs) * periodMs).toISOString();
      if (!(await recordJobRun(db, { job: job.name, slot, started_at: new Date(now).toISOString() }))) return undefined;
      await pruneJobRuns(db, new Date(now - KEEP_RUNS_MS).toISOString());
      return job.run();
    },
  };
}
