import { randomUUID } from 'node:crypto';
import type { Db } from '../db/knex.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../logger.js';
import * as queries from './queries.js';
import type { Attempt, Sender } from './send.js';
import { signatureHeaders } from './sign.js';
import type { SecretBox } from '../secrets/secret-box.js';

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
  /** How long a claim holds a delivery: longer than an attempt can take. */
  leaseMs: number;
  /** Multiplies each retry wait (tests shorten the schedule with it). */
  retryScale: number;
  random: () => number;
}

export const defaultWebhookWorkerOptions: WebhookWorkerOptions = { concurrency: 8, leaseMs: 60_000, retryScale: 1, random: Math.random };

/** The wait after `attempts` failed attempts, or null when there are no more. */
export function retryDelay(attempts: number, options: Pick<WebhookWorkerOptions, 'retryScale' | 'random'>): number | null {
  const base = RETRY_DELAYS_MS[attempts - 1];
  if (base === undefined) return null;
  return Math.round(base * options.retryScale * (0.9 + 0.2 * options.random()));
}

export type WebhookWorker = ReturnType<typeof createWebhookWorker>;

/**
 * Claims due deliveries (any number of processes: db/claims.ts gives each to one), signs and
 * POSTs each, and records what came of it: delivered on a 2xx; on 410 the delivery fails and
 * the endpoint is disabled; anything else is tried again later (honouring `Retry-After`),
 * until the schedule runs out or the endpoint has failed for three days, which disables it.
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
  let running: Promise<number> | undefined;
  let followUp: Promise<number> | undefined;
  let stopped = false;

  async function drain(): Promise<number> {
    let sent = 0;
    for (;;) {
      const now = clock();
      const token = randomUUID();
      let claimed: queries.ClaimedDelivery[];
      try {
        claimed = await queries.claimDueDeliveries(db, { now: now.toISOString(), leaseUntil: new Date(now.getTime() + options.leaseMs).toISOString(), token, limit: options.concurrency });
      } catch (err) {
        logger.error({ err }, 'could not claim webhook deliveries');
        return sent;
      }
      await Promise.all(claimed.map((delivery) => deliver(delivery, token)));
      sent += claimed.length;
      if (stopped || claimed.length < options.concurrency) return sent;
    }
  }

  async function deliver(delivery: queries.ClaimedDelivery, token: string): Promise<void> {
    const at = clock();
    const signingSecrets = [delivery.secret];
    if (delivery.previous_secret && delivery.previous_secret_until && delivery.previous_secret_until > at.toISOString()) signingSecrets.push(delivery.previous_secret);
    const attempt = await sender.post(delivery.url, signatureHeaders(delivery.event_id, delivery.body, signingSecrets.map(secrets.open), at), delivery.body);
    try {
      await record(delivery, token, attempt);
    } catch (err) {
      // The lease runs out and the delivery is tried again: at least once, with the same webhook-id.
      logger.error({ err, delivery: delivery.id }, 'could not record a webhook attempt');
    }
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
      const retryAt = wait === null ? null : new Date(now.getTime() + Math.max(wait, Math.min(attempt.kind === 'answered' ? (attempt.retryAfterMs ?? 0) : 0, MAX_RETRY_AFTER_MS))).toISOString();
      const changes = retryAt === null ? { ...seen, status: 'failed' as const } : { ...seen, available_at: retryAt };
      if (!(await queries.recordAttempt(trx, claim, changes))) return;
      if (disable) {
        await queries.updateEndpoint(trx, delivery.endpoint_id, { enabled: false, disabled_reason: disable, failing_since: failingSince, updated_at: at });
        logger.warn({ endpoint: delivery.endpoint_id, reason: disable }, 'disabled a webhook endpoint');
      } else if (!delivery.failing_since) {
        await queries.updateEndpoint(trx, delivery.endpoint_id, { failing_since: failingSince });
      }
    });
  }

  /**
   * Sends every due delivery, a claimed batch at a time; how many were attempted. Never
   * throws. Calls made while a drain runs share one follow-up drain, so work recorded after
   * the running one last looked is not left to the next tick.
   */
  function tick(): Promise<number> {
    if (!running) {
      running = drain().finally(() => {
        running = undefined;
      });
      return running;
    }
    followUp ??= running.then(() => {
      followUp = undefined;
      return tick();
    });
    return followUp;
  }

  return {
    tick,
    /** New deliveries were recorded: send them now rather than at the next tick. */
    nudge(): void {
      if (!stopped) void tick();
    },
    async stop(): Promise<void> {
      stopped = true;
      await followUp;
      await running;
    },
  };
}
