import { randomUUID } from 'node:crypto';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Db } from '../db/knex.js';
import type { Logger } from '../logger.js';
import { type Clock, laterThan } from '../lib/clock.js';
import { keepLeases } from '../db/claims.js';
import { findScribesByIds } from '../scribes/queries.js';
import { messages as scribeMessages } from '../scribes/service.js';
import type { ReceiptInput } from '../tasks/service.js';
import { requestEvent, type NewEvent, type RecordEvents } from '../webhooks/events.js';
import * as queries from './queries.js';
import type { RequestRow } from './queries.js';

export const messages = {
  gaveUp: (attempts: number) => `Dispatch failed after ${attempts} attempts`,
};

export interface DispatcherOptions {
  /** Receipts claimed per round trip. */
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

export interface TickResult {
  fulfilled: number;
  failed: number;
  retried: number;
}

export type Dispatcher = ReturnType<typeof createDispatcher>;

/**
 * Moves receipts accepted → dispatched → fulfilled (a task is created) or failed.
 * `tick()` drains everything due and never throws; ticks never overlap, and calls made
 * while one runs share a single follow-up tick.
 */
export function createDispatcher({
  db,
  clock,
  logger,
  options = defaultDispatcherOptions,
  createTask,
  recordEvents = async () => [],
  onTasksCreated = () => {},
  onFinished = () => {},
}: {
  db: Db;
  clock: Clock;
  logger: Logger;
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
  let running: Promise<unknown> = Promise.resolve();
  let next: Promise<TickResult> | null = null;
  let stopped = false;
  let lastTickAt: Date | null = null;

  /** Claims due receipts (accepted ones, or dispatched ones whose lease ran out). */
  async function claim(limit = options.batchSize): Promise<{ token: string; requests: RequestRow[] }> {
    const now = clock();
    const token = randomUUID();
    const requests = await queries.claimDueRequests(db, {
      now: now.toISOString(),
      nowPlus1ms: new Date(now.getTime() + 1).toISOString(),
      leaseUntil: new Date(now.getTime() + options.leaseMs).toISOString(),
      token,
      limit,
    });
    return { token, requests };
  }

  /**
   * Completes claimed receipts. The whole batch is one transaction (fast path); if it
   * fails, each receipt is retried alone so one bad receipt cannot hold up the rest.
   */
  async function complete(token: string, requests: readonly RequestRow[]): Promise<TickResult> {
    const result: TickResult = { fulfilled: 0, failed: 0, retried: 0 };
    if (requests.length === 0) return result;
    const scribes = await findScribesByIds(db, [...new Set(requests.map((r) => r.scribe_id))]);
    const activeScribes = new Set(scribes.filter((s) => s.state === 'active').map((s) => s.id));
    const slugs = new Map(scribes.map((s) => [s.id, s.slug]));
    /** The event of a receipt that ended, as it is now. */
    const ended = (request: RequestRow, changes: Partial<RequestRow>): NewEvent => requestEvent({ ...request, ...changes }, slugs.get(request.scribe_id) ?? '');
    try {
      const outcomes: Array<[RequestRow, Outcome]> = [];
      await db.transaction(async (trx) => {
        const events: NewEvent[] = [];
        for (const request of requests) outcomes.push([request, await completeOne(trx, token, request, activeScribes, events, ended)]);
        await recordEvents(trx, events);
      });
      for (const [request, outcome] of outcomes) {
        report(request, outcome);
        count(result, outcome);
      }
      return result;
    } catch (err) {
      logger.debug({ err }, 'batch dispatch failed; completing receipts one by one');
    }
    const single: TickResult = { fulfilled: 0, failed: 0, retried: 0 };
    for (const request of requests) {
      try {
        const outcome = await db.transaction(async (trx) => {
          const events: NewEvent[] = [];
          const done = await completeOne(trx, token, request, activeScribes, events, ended);
          await recordEvents(trx, events);
          return done;
        });
        report(request, outcome);
        count(single, outcome);
      } catch (err) {
        const outcome = await recordFailure(token, request, err, ended);
        report(request, outcome);
        count(single, outcome);
      }
    }
    return single;
  }

  function report(request: RequestRow, outcome: Outcome): void {
    if (outcome === 'fulfilled' || outcome === 'failed') onFinished(outcome, clock().getTime() - Date.parse(request.created_at));
  }

  /** Creates the task and marks the receipt fulfilled, in the caller's transaction; adds the receipt's event to `events`. */
  async function completeOne(trx: Db, token: string, request: RequestRow, activeScribes: Set<string>, events: NewEvent[], ended: EventOf) {
    const now = laterThan(clock, request.updated_at);
    const claimRef = { id: request.id, token };
    if (!activeScribes.has(request.scribe_id)) {
      const failed = await queries.finishClaimedRequest(trx, claimRef, { status: 'failed', errorMessage: scribeMessages.scribeNotActive }, now);
      if (!failed) return 'lost';
      events.push(ended(request, { status: 'failed', error_message: scribeMessages.scribeNotActive, updated_at: now }));
      return 'failed';
    }
    const taskId = await createTask(trx, request, now);
    const fulfilled = await queries.finishClaimedRequest(trx, claimRef, { status: 'fulfilled', entityId: taskId }, now);
    // Lost the claim to another dispatcher: roll the task back with the transaction.
    if (!fulfilled) throw new LostClaim(request.id);
    events.push(ended(request, { status: 'fulfilled', entity_id: taskId, updated_at: now }));
    return 'fulfilled';
  }

  async function recordFailure(token: string, request: RequestRow, err: unknown, ended: EventOf): Promise<Outcome> {
    if (err instanceof LostClaim) return 'lost';
    const claimRef = { id: request.id, token };
    const now = clock();
    try {
      if (request.attempts >= options.maxAttempts) {
        logger.error({ err, requestId: request.id, attempts: request.attempts }, 'dispatch failed; giving up');
        const at = laterThan(clock, request.updated_at);
        const errorMessage = messages.gaveUp(request.attempts);
        await db.transaction(async (trx) => {
          if (await queries.finishClaimedRequest(trx, claimRef, { status: 'failed', errorMessage }, at)) {
            await recordEvents(trx, [ended(request, { status: 'failed', error_message: errorMessage, updated_at: at })]);
          }
        });
        return 'failed';
      }
      logger.warn({ err, requestId: request.id, attempts: request.attempts }, 'dispatch failed; will retry');
      const retryAt = new Date(now.getTime() + options.backoffMs(request.attempts)).toISOString();
      await queries.releaseClaimedRequest(db, claimRef, retryAt);
      return 'retried';
    } catch (recordErr) {
      // The lease runs out on its own and the receipt is claimed again.
      logger.error({ err: recordErr, requestId: request.id }, 'could not record dispatch failure');
      return 'retried';
    }
  }

  async function drain(): Promise<TickResult> {
    const total: TickResult = { fulfilled: 0, failed: 0, retried: 0 };
    while (!stopped) {
      const { token, requests } = await claim();
      if (requests.length === 0) break;
      const lease = keepLeases(
        () => queries.renewRequestLeases(db, { ids: requests.map((r) => r.id), token }, new Date(clock().getTime() + options.leaseMs).toISOString()),
        options.leaseMs / 3,
      );
      const result = await complete(token, requests).finally(() => lease.stop());
      if (result.fulfilled > 0) onTasksCreated();
      total.fulfilled += result.fulfilled;
      total.failed += result.failed;
      total.retried += result.retried;
      // Let HTTP requests in between batches of a large backlog.
      await yieldToEventLoop();
    }
    return total;
  }

  async function runTick(): Promise<TickResult> {
    lastTickAt = clock();
    try {
      return await drain();
    } catch (err) {
      logger.error({ err }, 'dispatcher tick failed');
      return { fulfilled: 0, failed: 0, retried: 0 };
    }
  }

  function tick(): Promise<TickResult> {
    if (next) return next;
    const scheduled = running.then(() => {
      next = null;
      return runTick();
    });
    next = scheduled;
    running = scheduled;
    return scheduled;
  }

  return {
    tick,
    /** Asks for a tick soon without waiting for it (after each accepted receipt). */
    nudge(): void {
      if (!stopped) void tick();
    },
    /** When the dispatcher last looked for work (health pages). */
    get lastTickAt(): Date | null {
      return lastTickAt;
    },
    /** Stops ticking and waits for the tick in progress. */
    async stop(): Promise<void> {
      stopped = true;
      await running;
    },
    // Exposed so tests can leave receipts claimed, as a crashed process would.
    claim,
    complete,
  };
}

type Outcome = 'fulfilled' | 'failed' | 'retried' | 'lost';
type EventOf = (request: RequestRow, changes: Partial<RequestRow>) => NewEvent;

class LostClaim extends Error {
  constructor(requestId: string) {
    super(`claim on ${requestId} was taken over`);
  }
}

function count(result: TickResult, outcome: Outcome): void {
  if (outcome === 'fulfilled') result.fulfilled++;
  else if (outcome === 'failed') result.failed++;
  else if (outcome === 'retried') result.retried++;
}
