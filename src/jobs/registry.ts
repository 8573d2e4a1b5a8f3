import type { Services } from '../services.js';
import type { Job } from './scheduler.js';

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/**
 * Every background job of a process that does background work, in one list. Every such
 * process runs the queues (their claims keep each item to one process); maintenance runs
 * once per database (`once`, with each schedule's period).
 */
export function backgroundJobs(services: Services): Job[] {
  const once = services.oncePerDatabase;
  return [
    // Cron is the backstop; accepted receipts also wake the dispatchers at once.
    { name: 'dispatch-requests', schedule: '* * * * * *', run: () => services.dispatcher.tick() },
    // Each due schedule is claimed by one process; its fire's unique key keeps a fire time to one receipt.
    { name: 'fire-schedules', schedule: '* * * * * *', run: () => services.schedules.tick() },
    // Claims due sessions and tasks into free slots and returns; the work runs on its own.
    { name: 'run-agents', schedule: '* * * * * *', run: async () => services.runtime.fill() },
    // Claims due webhook deliveries (retries among them) into free slots and returns; new events also wake the worker at once.
    { name: 'send-webhooks', schedule: '* * * * * *', run: async () => services.webhookWorker.fill() },
    // Idempotency keys are kept 24 hours.
    once({ name: 'prune-idempotency-keys', schedule: '0 */10 * * * *', run: () => services.idempotency.prune() }, 10 * MINUTE_MS),
    // Old finished sessions and orphaned files, when configured (RETENTION_*): daily at 03:17.
    once({ name: 'retention', schedule: '0 17 3 * * *', run: () => services.retention.run() }, DAY_MS),
    // As the data grows: the text index merged (a step at a time) and the query planner's statistics kept.
    once({ name: 'maintain-database', schedule: '0 47 4 * * *', run: () => services.maintenance.maintainDatabase() }, DAY_MS),
    // Console sign-ins that expired; connect-session-knex's own timer is off (see console/index.ts).
    // Rate-limit counters whose minute (or sign-in window) is over.
    once({ name: 'prune-rate-limits', schedule: '0 */10 * * * *', run: () => services.maintenance.pruneRateLimits() }, 10 * MINUTE_MS),
    once({ name: 'prune-console-sessions', schedule: '0 */10 * * * *', run: () => services.maintenance.pruneConsoleSessions() }, 10 * MINUTE_MS),
  ];
}
