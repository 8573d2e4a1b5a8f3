import cron, { type ScheduledTask } from 'node-cron';
import type { Logger } from '../logger.js';
import { settledWithin } from '../lib/settled-within.js';

/** A background job: a name for logs, a cron expression (with seconds) and the work. */
export interface Job {
  name: string;
  schedule: string;
  run: () => Promise<unknown>;
}

export type Scheduler = ReturnType<typeof createScheduler>;

/** Runs jobs on their schedules; a job's run never overlaps itself and its errors are logged, never thrown. */
export function createScheduler(jobs: readonly Job[], logger: Logger) {
  let tasks: ScheduledTask[] = [];
  /** Runs under way: `stop` waits for them, since node-cron's destroy() does not. */
  const running = new Set<Promise<void>>();
  // node-cron's own messages go through pino. A skipped run because the previous one is
  // still busy is expected under load (the dispatcher drains everything due), so it is debug.
  const cronLogger = {
    info: (message: string) => logger.debug({ source: 'node-cron' }, message),
    warn: (message: string) => logger.debug({ source: 'node-cron' }, message),
    error: (message: string | Error, err?: Error) => logger.error({ source: 'node-cron', err: err ?? message }, String(message)),
    debug: (message: string | Error) => logger.debug({ source: 'node-cron' }, String(message)),
  };

  return {
    start(): void {
      tasks = jobs.map((job) =>
        cron.schedule(
          job.schedule,
          async () => {
            const run = job.run().then(
              () => {},
              (err: unknown) => logger.error({ err, job: job.name }, 'background job failed'),
            );
            running.add(run);
            await run.finally(() => running.delete(run));
          },
          { name: job.name, noOverlap: true, logger: cronLogger },
        ),
      );
    },

    /** Stops future runs, and waits (up to `waitMs`) for the runs under way; what they started is drained by its owner (e.g. the dispatcher's stop()). */
    async stop(waitMs = 0): Promise<void> {
      await Promise.all(tasks.map((task) => task.destroy()));
      tasks = [];
      if (running.size > 0) await settledWithin([...running], waitMs);
    },
  };
}
