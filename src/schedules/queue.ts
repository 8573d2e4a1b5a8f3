import type { Db } from '../db/knex.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../logger.js';
import { workQueue, type Queue } from '../work/engine.js';
import * as queries from './queries.js';
import type { FireRow, ScheduleRow } from './queries.js';
import { dialectOf } from '../db/dialect.js';

export interface ScheduleOptions {
  /** Schedules claimed per round trip, fired one after another. */
  batchSize: number;
  /** How long a claim is exclusive unless renewed (every third of it, while its fires run). */
  leaseMs: number;
}

export const defaultScheduleOptions: ScheduleOptions = { batchSize: 20, leaseMs: 30_000 };

/**
 * The schedules' queue: due schedules (their next fire time has come) are claimed a batch
 * at a time, and each is fired and moved to its next fire time (`fireDue`, the schedules
 * service). A fire that fails is left claimed: the lease runs out and it is tried again,
 * and the fire's unique key keeps the fire time to one receipt. Schedules of a batch not yet
 * fired when the process stops are handed back.
 */
export function createScheduleFires({
  db,
  clock,
  logger,
  options,
  fireDue,
}: {
  db: Db;
  clock: Clock;
  logger: Logger;
  options: ScheduleOptions;
  fireDue: (schedule: ScheduleRow, token: string) => Promise<FireRow | undefined>;
}) {
  const queue: Queue<ScheduleRow, 'submitted' | 'skipped'> = {
    name: 'schedules',
    options: { slots: 1, ...options },
    outcomes: ['submitted', 'skipped'],
    claim: ({ now, token, leaseUntil, limit }) => queries.claimDueSchedules(db, { now: now.toISOString(), leaseUntil, token, limit }),
    renew: (claim, leaseUntil) => queries.renewScheduleLeases(db, claim, leaseUntil),
    run: async (schedule, { token }) => (await fireDue(schedule, token))?.outcome,
    handBack: (claim) => queries.releaseSchedule(db, claim),
    tidy: () => dialectOf(db).tidyAfterDrain(db, ['schedules']),
  };
  return workQueue(queue, { clock, logger });
}
