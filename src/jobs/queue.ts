import { CronExpressionParser } from 'cron-parser';
import type { Db } from '../db/knex.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../logger.js';
import { workQueue, type Queue } from '../work/engine.js';
import { pruneJobRuns, recordJobRun } from './queries.js';

/** A maintenance job: a name for logs, a cron expression (with seconds, in UTC) and the work. */
export interface Job {
  name: string;
  schedule: string;
  run: () => Promise<unknown>;
}

/** A fire of a job this process won. */
interface JobFire {
  id: string;
  job: Job;
}

const DAY_MS = 86_400_000;
/** Runs are remembered this long: far longer than any job's period. */
const KEEP_RUNS_MS = 7 * DAY_MS;

/**
 * The maintenance jobs' queue: a job is due when a fire time of its schedule has passed
 * since this process last looked, and it runs once per database, whichever processes look:
 * only the process that records the (job, fire time) row first runs it, as solid_queue does
 * for recurring tasks. A job never overlaps itself here (a fire that comes while its last
 * run goes on is skipped), and fire times that passed before the process started are not
 * caught up. A job takes no signal: on stop, the process waits for it as long as it lets
 * running work drain, and no longer.
 */
export function createJobs({ db, clock, logger, jobs }: { db: Db; clock: Clock; logger: Logger; jobs: readonly Job[] }) {
  /** Each job's first fire time after the latest this process has seen: nothing is due before it. */
  const nextFire = new Map<string, number>();
  /** The latest fire time at or before `now`, and the first after it. */
  const firesAround = (job: Job, now: Date) => {
    const fires = CronExpressionParser.parse(job.schedule, { tz: 'UTC', currentDate: new Date(now.getTime() + 1) });
    const latest = fires.prev().getTime();
    return { latest, next: fires.next().getTime() };
  };

  const queue: Queue<JobFire, never> = {
    name: 'jobs',
    // Nothing to lease: the run's row is the claim.
    options: { slots: Math.max(1, jobs.length), leaseMs: 0 },
    outcomes: [],
    caps: { job: 1 },
    keysOf: (fire) => ({ job: fire.job.name }),
    async claim({ now, full }) {
      const won: JobFire[] = [];
      for (const job of jobs) {
        const next = nextFire.get(job.name);
        // No fire since the last look: the expression is read again only when one has come.
        if (next !== undefined && now.getTime() < next) continue;
        const { latest: fireAt, next: after } = firesAround(job, now);
        nextFire.set(job.name, after);
        // The first look only notes where the schedule stands: fires before the process started are not caught up.
        if (next === undefined || full.job!.includes(job.name)) continue;
        const slot = new Date(fireAt).toISOString();
        if (!(await recordJobRun(db, { job: job.name, slot, started_at: now.toISOString() }))) continue;
        await pruneJobRuns(db, new Date(now.getTime() - KEEP_RUNS_MS).toISOString());
        won.push({ id: `${job.name} ${slot}`, job });
      }
      return won;
    },
    run: (fire, { signal }) =>
      new Promise<void>((resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        fire.job.run().then(() => resolve(), reject);
      }),
  };
  return workQueue(queue, { clock, logger });
}
