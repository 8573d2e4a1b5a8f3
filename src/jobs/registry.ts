import type { Job } from './queue.js';

/**
 * The maintenance jobs, in one list: each runs once per database on its schedule (cron with
 * seconds, UTC; jobs/queue.ts), whichever of the processes doing background work fires it.
 */
export function maintenanceJobs(parts: {
  idempotency: { prune(): Promise<unknown> };
  retention: { run(): Promise<unknown> };
  maintenance: { maintainDatabase(): Promise<unknown>; pruneRateLimits(): Promise<unknown>; pruneConsoleSessions(): Promise<unknown>; pruneStreamDeltas(): Promise<unknown> };
}): Job[] {
  return [
    // Idempotency keys are kept 24 hours.
    { name: 'prune-idempotency-keys', schedule: '0 */10 * * * *', run: () => parts.idempotency.prune() },
    // Old finished sessions and orphaned files, when configured (RETENTION_*): daily at 03:17.
    { name: 'retention', schedule: '0 17 3 * * *', run: () => parts.retention.run() },
    // As the data grows: the text index merged (a step at a time) and the query planner's statistics kept.
    { name: 'maintain-database', schedule: '0 47 4 * * *', run: () => parts.maintenance.maintainDatabase() },
    // Rate-limit counters whose minute (or sign-in window) is over.
    { name: 'prune-rate-limits', schedule: '0 */10 * * * *', run: () => parts.maintenance.pruneRateLimits() },
    // Event-stream deltas a day old: the replies they built are kept whole in their message events.
    { name: 'prune-stream-deltas', schedule: '0 27 * * * *', run: () => parts.maintenance.pruneStreamDeltas() },
    // Console sign-ins that expired; connect-session-knex's own timer is off (see console/index.ts).
    { name: 'prune-console-sessions', schedule: '0 */10 * * * *', run: () => parts.maintenance.pruneConsoleSessions() },
  ];
}
