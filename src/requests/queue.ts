import type { Db } from '../db/knex.js';
import type { Wakeups } from '../db/wakeups.js';
import type { Logger } from '../logger.js';
import { type Clock, laterThan } from '../lib/clock.js';
import { findScribesByIds } from '../scribes/queries.js';
import { messages as scribeMessages } from '../scribes/service.js';
import type { ReceiptInput } from '../tasks/service.js';
import { requestEvent, type NewEvent, type RecordEvents } from '../webhooks/events.js';
import { workQueue, type Queue } from '../work/engine.js';
import * as queries from './queries.js';
import type { RequestRow } from './queries.js';

export const messages = {
  gaveUp: (attempts: number) => `Dispatch failed after ${attempts} attempts`,
};

export interface DispatcherOptions {
  /** Receipts claimed per round trip, completed together in one transaction. */
  batchSize: number;
  /** How long a claim is exclusive unless renewed (every third of it, while its batch runs); a lapsed one is taken over (crash recovery). */
  leaseMs: number;
  /** Claims per receipt before an unexpected error fails it for good. */
  maxAttempts: number;
  /** Delay before the next try after an unexpected error on try `attempt` (1-based). */
  backoffMs: (attempt: number) => number;
}

export const defaultDispatcherOptions: DispatcherOptions = {
  batchSize: 500,
  leaseMs: 10_000,
  maxAttempts: 5,
  backoffMs: (attempt) => Math.min(1000 * 2 ** (attempt - 1), 60_000),
};

type Outcome = 'fulfilled' | 'failed' | 'retried';

export type Dispatcher = ReturnType<typeof createDispatcher>;

/**
 * The receipts' queue: moves receipts accepted → dispatched → fulfilled (a task is created)
 * or failed. Due: accepted receipts, and dispatched ones whose lease or back-off ran out. A
 * claimed batch is completed in one transaction; if that fails, each receipt alone (the
 * engine), so one bad receipt cannot hold up the rest. An unexpected error is retried with
 * back-off, and fails the receipt after `maxAttempts`.
 */
export function createDispatcher({
  db,
  clock,
  logger,
  wakeups,
  options = defaultDispatcherOptions,
  createTask,
  recordEvents = async () => [],
  onTasksCreated = () => {},
  onFinished = () => {},
}: {
  db: Db;
  clock: Clock;
  logger: Logger;
  wakeups?: Wakeups;
  options?: DispatcherOptions;
  /** Creates a fulfilled receipt's task in the given transaction (the tasks service); returns its id. */
  createTask: (trx: Db, receipt: ReceiptInput, at: string) => Promise<string>;
  /** Writes the receipts' `request.fulfilled` / `request.failed` events in the transaction that ends them (the outbox). */
  recordEvents?: RecordEvents;
  /** Called after a batch created tasks, so the agent runtime starts on them at once. */
  onTasksCreated?: () => void;
  /** Called once per receipt that ended (committed), with the time since it was accepted (metrics). */
  onFinished?: (outcome: 'fulfilled' | 'failed', ms: number) => void;
}) {
  /** The receipts' scribes: which are active, and the event of a receipt that ended, as it is now. */
  async function scribesOf(requests: readonly RequestRow[]) {
    const scribes = await findScribesByIds(db, [...new Set(requests.map((r) => r.scribe_id))]);
    const slugs = new Map(scribes.map((s) => [s.id, s.slug]));
    return {
      active: new Set(scribes.filter((s) => s.state === 'active').map((s) => s.id)),
      ended: (request: RequestRow, changes: Partial<RequestRow>): NewEvent => requestEvent({ ...request, ...changes }, slugs.get(request.scribe_id) ?? ''),
    };
  }
  const report = (request: RequestRow, outcome: Outcome) => {
    if (outcome === 'fulfilled' || outcome === 'failed') onFinished(outcome, clock().getTime() - Date.parse(request.created_at));
  };

  /** Completes claimed receipts in one transaction: each gets its task (or fails, for a scribe not active) and its event. */
  async function complete(requests: readonly RequestRow[], token: string): Promise<Outcome[]> {
    const { active, ended } = await scribesOf(requests);
    const outcomes = await db.transaction(async (trx) => {
      const events: NewEvent[] = [];
      const done: Outcome[] = [];
      for (const request of requests) {
        const now = laterThan(clock, request.updated_at);
        const claim = { id: request.id, token };
        const event = (changes: Partial<RequestRow>) => events.push(ended(request, { ...changes, updated_at: now }));
        if (!active.has(request.scribe_id)) {
          if (!(await queries.finishClaimedRequest(trx, claim, { status: 'failed', errorMessage: scribeMessages.scribeNotActive }, now))) throw new LostClaim(request.id);
          event({ status: 'failed', error_message: scribeMessages.scribeNotActive });
          done.push('failed');
          continue;
        }
        const taskId = await createTask(trx, request, now);
        // Lost the claim to another dispatcher: roll the task back with the transaction.
        if (!(await queries.finishClaimedRequest(trx, claim, { status: 'fulfilled', entityId: taskId }, now))) throw new LostClaim(request.id);
        event({ status: 'fulfilled', entity_id: taskId });
        done.push('fulfilled');
      }
      await recordEvents(trx, events);
      return done;
    });
    requests.forEach((request, i) => report(request, outcomes[i]!));
    if (outcomes.includes('fulfilled')) onTasksCreated();
    return outcomes;
  }

  const queue: Queue<RequestRow, Outcome> = {
    name: 'dispatch',
    channel: 'scribe_requests',
    options: { slots: 1, ...options },
    outcomes: ['fulfilled', 'failed', 'retried'],
    claim: ({ now, token, leaseUntil, limit }) =>
      queries.claimDueRequests(db, { now: now.toISOString(), nowPlus1ms: new Date(now.getTime() + 1).toISOString(), leaseUntil, token, limit }),
    renew: (claim, leaseUntil) => queries.renewRequestLeases(db, claim, leaseUntil),
    runBatch: (requests, { token }) => complete(requests, token),
    async run(request, { token }) {
      try {
        return (await complete([request], token))[0];
      } catch (err) {
        // Taken over by another dispatcher, which completes it.
        if (err instanceof LostClaim) return undefined;
        throw err;
      }
    },
    retry: (claim, _request, retryAt) => queries.releaseClaimedRequest(db, claim, retryAt),
    handBack: (claim) => queries.releaseClaimedRequest(db, claim, clock().toISOString()),
    async giveUp(claim, request) {
      const at = laterThan(clock, request.updated_at);
      const errorMessage = messages.gaveUp(request.attempts);
      const { ended } = await scribesOf([request]);
      const failed = await db.transaction(async (trx) => {
        if (!(await queries.finishClaimedRequest(trx, claim, { status: 'failed', errorMessage }, at))) return false;
        await recordEvents(trx, [ended(request, { status: 'failed', error_message: errorMessage, updated_at: at })]);
        return true;
      });
      if (failed) report(request, 'failed');
    },
  };
  return workQueue(queue, { clock, logger, wakeups });
}

class LostClaim extends Error {
  constructor(requestId: string) {
    super(`claim on ${requestId} was taken over`);
  }
}
