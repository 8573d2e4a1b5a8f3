import type { Db } from '../db/knex.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../logger.js';
import * as queries from './queries.js';
import type { Attempt, Sender } from './send.js';
import { signatureHeaders } from './sign.js';
import type { SecretBox } from '../secrets/secret-box.js';
import { shareSlots, workQueue, type ClaimTerms, type Queue } from '../work/engine.js';
import { dialectOf } from '../db/dialect.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * The wait after each failed attempt: Standard Webhooks' schedule (5 s, 5 min, 30 min, 2 h,
 * 5 h, 10 h, 10 h), stretched with 14-hour steps to about three days in all. After the last,
 * the delivery has failed. Each wait is jittered by ±10 % so that an endpoint's backlog does
 * not come back in one burst.
 */
export const RETRY_DELAYS_MS = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR, 14 * HOUR, 14 * HOUR, 14 * HOUR] as const;
/** An endpoint that has failed every attempt for this long is disabled. */
export const DISABLE_AFTER_MS = 3 * 24 * HOUR;
/** The most a `Retry-After` may push an attempt back. */
const MAX_RETRY_AFTER_MS = 24 * HOUR;

export interface WebhookWorkerOptions {
  /** Deliveries in flight per process. */
  concurrency: number;
  /** Of those, at most this many to one endpoint: one that does not answer holds no more slots than this while it times out. */
  perEndpoint: number;
  /** Of those, at most this many to one organization's endpoints. */
  perOrganization: number;
  /** How long a claim holds a delivery: longer than an attempt can take. */
  leaseMs: number;
  /** Multiplies each retry wait (tests shorten the schedule with it). */
  retryScale: number;
  random: () => number;
}

export const defaultWebhookWorkerOptions: WebhookWorkerOptions = { concurrency: 32, perEndpoint: 4, perOrganization: 16, leaseMs: 60_000, retryScale: 1, random: Math.random };

/** The wait after `attempts` failed attempts, or null when there are no more. */
export function retryDelay(attempts: number, options: Pick<WebhookWorkerOptions, 'retryScale' | 'random'>): number | null {
  const base = RETRY_DELAYS_MS[attempts - 1];
  if (base === undefined) return null;
  return Math.round(base * options.retryScale * (0.9 + 0.2 * options.random()));
}

export type WebhookWorker = ReturnType<typeof createWebhookWorker>;

/**
 * The deliveries' queue: signs and POSTs each claimed delivery and records what came of it:
 * delivered on a 2xx; on 410 the delivery fails and the endpoint is disabled; anything else
 * is tried again later (honouring `Retry-After`), until the schedule runs out or the
 * endpoint has failed for three days, which disables it. A record that fails is left to
 * the lease: the delivery is tried again, with the same webhook-id.
 *
 * Slots are shared: each claim fills the free ones with a share for each organization whose
 * turn has come, from the endpoint whose turn has come (queries.ts, "Whose turn"), passing
 * over endpoints and organizations that already have `perEndpoint` / `perOrganization`
 * deliveries under way here. A finished attempt frees its slot for the next claim at once.
 */
export function createWebhookWorker({
  db,
  clock,
  logger,
  sender,
  secrets,
  options,
}: {
  db: Db;
  clock: Clock;
  logger: Logger;
  sender: Sender;
  /** Opens the endpoints' sealed signing secrets. */
  secrets: SecretBox;
  options: WebhookWorkerOptions;
}) {
  const queue: Queue<queries.ClaimedDelivery, 'attempted'> = {
    name: 'webhooks',
    channel: 'scribe_webhooks',
    // Not renewed: an attempt ends within the send timeout, well inside the lease.
    options: { slots: options.concurrency, leaseMs: options.leaseMs },
    outcomes: ['attempted'],
    caps: { endpoint: options.perEndpoint, organization: options.perOrganization },
    keysOf: (delivery) => ({ endpoint: delivery.endpoint_id, organization: delivery.organization_id }),
    claim: async ({ now, token, leaseUntil, limit, full, room }) => {
      const skipEndpoints = full.endpoint!;
      const terms = {
        now: now.toISOString(),
        leaseUntil,
        token,
        // An organization whose due endpoints all have their fill here comes without one: room for as many.
        limit: limit + skipEndpoints.length,
        skipOrganizations: full.organization!,
        skipEndpoints,
      };
      const claimed = await queries.claimInTurn(db, terms, (turns) => shareOut(limit, turns, room));
      // A claim serves one endpoint per organization: an organization served may have other
      // endpoints due, and an endpoint given its whole share more deliveries. A next claim
      // looks for them at once, and one that finds nothing ends the round.
      return { items: claimed, inconclusive: claimed.length > 0 };
    },
    run: async (delivery, { token }) => {
      await deliver(delivery, token);
      return 'attempted';
    },
    // What claims read: the deliveries, and the endpoints' turns.
    tidy: () => dialectOf(db).tidyAfterDrain(db, ['webhook_deliveries', 'webhook_endpoints']),
  };

  /** The free slots shared among the endpoints whose turn it is, each within what it and its organization may still take. */
  function shareOut(free: number, turns: readonly queries.Turn[], room: ClaimTerms['room']): Array<[endpointId: string, count: number]> {
    const offered = turns.filter((turn): turn is queries.Turn & { endpoint_id: string } => turn.endpoint_id !== null);
    return shareSlots(free, offered, (turn) => Math.min(room('endpoint', turn.endpoint_id), room('organization', turn.organization_id))).map(([turn, n]) => [turn.endpoint_id, n]);
  }

  async function deliver(delivery: queries.ClaimedDelivery, token: string): Promise<void> {
    const at = clock();
    const signingSecrets = [delivery.secret];
    if (delivery.previous_secret && delivery.previous_secret_until && delivery.previous_secret_until > at.toISOString()) signingSecrets.push(delivery.previous_secret);
    const attempt = await sender.post(delivery.url, signatureHeaders(delivery.event_id, delivery.body, signingSecrets.map(secrets.open), at), delivery.body);
    await record(delivery, token, attempt);
  }

  async function record(delivery: queries.ClaimedDelivery, token: string, attempt: Attempt): Promise<void> {
    const now = clock();
    const at = now.toISOString();
    const attempts = delivery.attempts + 1;
    const seen = {
      attempts,
      last_attempt_at: at,
      duration_ms: attempt.durationMs,
      response_status: attempt.kind === 'answered' ? attempt.status : null,
      response_body: attempt.kind === 'answered' ? attempt.body : null,
      request_headers: JSON.stringify(attempt.requestHeaders),
      response_headers: attempt.kind === 'answered' ? JSON.stringify(attempt.headers) : null,
      error: attempt.kind === 'unanswered' ? attempt.error : null,
      updated_at: at,
    };
    const claim = { id: delivery.id, token };
    const ok = attempt.kind === 'answered' && attempt.status >= 200 && attempt.status <= 299;
    await db.transaction(async (trx) => {
      if (ok) {
        if (!(await queries.recordAttempt(trx, claim, { ...seen, status: 'delivered', delivered_at: at }))) return;
        if (delivery.failing_since) await queries.updateEndpoint(trx, delivery.endpoint_id, { failing_since: null });
        return;
      }
      const gone = attempt.kind === 'answered' && attempt.status === 410;
      const failingSince = delivery.failing_since ?? at;
      const disable = gone ? 'The endpoint answered 410 Gone' : now.getTime() - Date.parse(failingSince) >= DISABLE_AFTER_MS ? 'Every delivery failed for three days' : null;
      const wait = gone ? null : retryDelay(attempts, options);
      const retryAt =
        wait === null ? null : new Date(now.getTime() + Math.max(wait, Math.min(attempt.kind === 'answered' ? (attempt.retryAfterMs ?? 0) : 0, MAX_RETRY_AFTER_MS))).toISOString();
      const changes = retryAt === null ? { ...seen, status: 'failed' as const } : { ...seen, available_at: retryAt };
      if (!(await queries.recordAttempt(trx, claim, changes))) return;
      if (disable) {
        await queries.updateEndpoint(trx, delivery.endpoint_id, { enabled: false, disabled_reason: disable, failing_since: failingSince, turn_at: null, updated_at: at });
        logger.warn({ endpoint: delivery.endpoint_id, reason: disable }, 'disabled a webhook endpoint');
        return;
      }
      // The retry is due before the claim's lease would have run out: its endpoint's turn comes by then.
      if (retryAt !== null) await queries.bringTurnsForward(trx, [delivery.endpoint_id], retryAt);
      if (!delivery.failing_since) await queries.updateEndpoint(trx, delivery.endpoint_id, { failing_since: failingSince });
    });
  }

  return workQueue(queue, { clock, logger });
}
