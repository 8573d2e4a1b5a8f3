import type { Db } from '../db/knex.js';
import type { Wakeups } from '../db/wakeups.js';
import type { Logger } from '../logger.js';
import { type Clock, laterThan } from '../lib/clock.js';
import { messages as scribeMessages } from '../scribes/service.js';
import type { ReceiptInput } from '../tasks/service.js';
import { requestEvent, type NewEvent, type RecordEvents } from '../webhooks/events.js';
import { workQueue, type Queue } from '../work/engine.js';
import * as queries from './queries.js';
import type { ClaimedRequest, RequestOutcome, RequestRow } from './queries.js';
import { dialectOf } from '../db/dialect.js';

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
  /** Receipts claimed between two tidies of the table (work/engine.ts, `tidyAfter`; 1,000 unless set). */
  tidyAfter?: number;
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
  createTasks,
  recordEvents = async () => [],
  onTasksCreated = () => {},
  onFinished = () => {},
}: {
  db: Db;
  clock: Clock;
  logger: Logger;
  wakeups?: Wakeups;
  options?: DispatcherOptions;
  /** Creates fulfilled receipts' tasks in the given transaction (the tasks service); returns their ids in order. */
  createTasks: (trx: Db, receipts: readonly ReceiptInput[], at: string) => Promise<string[]>;
  /** Writes the receipts' `request.fulfilled` / `request.failed` events in the transaction that ends them (the outbox). */
  recordEvents?: RecordEvents;
  /** Called after a batch created tasks, so the agent runtime starts on them at once. */
  onTasksCreated?: () => void;
  /** Called once per receipt that ended (committed), with the time since it was accepted (metrics). */
  onFinished?: (outcome: 'fulfilled' | 'failed', ms: number) => void;
}) {
  /** The event of a receipt that ended, as it is now. */
  const ended = (request: ClaimedRequest, changes: Partial<RequestRow>): NewEvent => requestEvent({ ...request, ...changes }, request.scribe_slug);
  const report = (request: RequestRow, outcome: Outcome) => {
    if (outcome === 'fulfilled' || outcome === 'failed') onFinished(outcome, clock().getTime() - Date.parse(request.created_at));
  };
  /** Ends the claimed `requests` with `outcome` in `trx`; a claim lost meanwhile rolls the whole transaction back. */
  async function finish(trx: Db, requests: readonly ClaimedRequest[], token: string, outcome: RequestOutcome, at: string): Promise<void> {
    const ids = requests.map((request) => request.id);
    if ((await queries.finishClaimedRequests(trx, { ids, token }, outcome, at)) < ids.length) throw new LostClaim(ids);
  }

  /**
   * Completes claimed receipts in one transaction, a statement per table for all of them:
   * the tasks of those whose scribe is active, the receipts' ends, their events. A receipt
   * of a scribe not active fails.
   */
  async function complete(requests: readonly ClaimedRequest[], token: string): Promise<Outcome[]> {
    const at = laterThan(
      clock,
      requests.reduce((latest, r) => (r.updated_at > latest ? r.updated_at : latest), requests[0]!.updated_at),
    );
    const outcomes: Outcome[] = requests.map((request) => (request.scribe_state === 'active' ? 'fulfilled' : 'failed'));
    const fulfilled = requests.filter((_, i) => outcomes[i] === 'fulfilled');
    const failed = requests.filter((_, i) => outcomes[i] === 'failed');
    await db.transaction(async (trx) => {
      const taskIds = new Map((await createTasks(trx, fulfilled, at)).map((taskId, i) => [fulfilled[i]!.id, taskId]));
      await finish(trx, fulfilled, token, { status: 'fulfilled' }, at);
      await finish(trx, failed, token, { status: 'failed', errorMessage: scribeMessages.scribeNotActive }, at);
      await recordEvents(
        trx,
        requests.map((request) =>
          taskIds.has(request.id)
            ? ended(request, { status: 'fulfilled', entity_id: taskIds.get(request.id)!, updated_at: at })
            : ended(request, { status: 'failed', error_message: scribeMessages.scribeNotActive, updated_at: at }),
        ),
      );
    });
    requests.forEach((request, i) => report(request, outcomes[i]!));
    if (fulfilled.length > 0) onTasksCreated();
    return outcomes;
  }

  const queue: Queue<ClaimedRequest, Outcome> = {
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
    retry: (claim, _request, retryAt) => queries.releaseClaimedRequest(db, claim, retryAt, { attempted: true }),
    handBack: (claim) => queries.releaseClaimedRequest(db, claim, clock().toISOString(), { attempted: false }),
    tidy: () => dialectOf(db).tidyAfterDrain(db, ['requests']),
    async giveUp(claim, request) {
      const at = laterThan(clock, request.updated_at);
      const errorMessage = messages.gaveUp(request.attempts);
      const failed = await db.transaction(async (trx) => {
        if ((await queries.finishClaimedRequests(trx, { ids: [claim.id], token: claim.token }, { status: 'failed', errorMessage }, at)) === 0) return false;
        await recordEvents(trx, [ended(request, { status: 'failed', error_message: errorMessage, updated_at: at })]);
        return true;
      });
      if (failed) report(request, 'failed');
    },
  };
  return workQueue(queue, { clock, logger, wakeups });
}

class LostClaim extends Error {
  constructor(requestIds: readonly string[]) {
    super(`a claim on one of ${requestIds.join(', ')} was taken over`);
  }
}
