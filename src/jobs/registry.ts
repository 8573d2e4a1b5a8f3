import type { Services } from '../services.js';
import type { Job } from './scheduler.js';

/** Every background job of the process, in one list. */
export function backgroundJobs(services: Services): Job[] {
  return [
    // Cron is the backstop; accepted receipts also nudge the dispatcher at once.
    { name: 'dispatch-requests', schedule: '* * * * * *', run: () => services.dispatcher.tick() },
    // Claims due sessions and tasks into free slots and returns; the work runs on its own.
    { name: 'run-agents', schedule: '* * * * * *', run: async () => services.runtime.fill() },
    // Idempotency keys are kept 24 hours.
    { name: 'prune-idempotency-keys', schedule: '0 */10 * * * *', run: () => services.idempotency.prune() },
    // Old finished sessions and orphaned files, when configured (RETENTION_*): daily at 03:17.
    { name: 'retention', schedule: '0 17 3 * * *', run: () => services.retention.run() },
    // As the data grows: the text index merged (a step at a time) and the query planner's statistics kept.
    {
      name: 'maintain-database',
      schedule: '0 47 4 * * *',
      run: () => services.maintenance.maintainDatabase(),
    },
    // Console sign-ins that expired; connect-session-knex's own timer is off (see console/index.ts).
    { name: 'prune-console-sessions', schedule: '0 */10 * * * *', run: () => services.maintenance.pruneConsoleSessions() },
  ];
}
