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
 * Claims due deliveries (any number of processes: db/claims.ts gives each to one), signs and
 * POSTs each, and records what came of it: delivered on a 2xx; on 410 the delivery fails and
 * the endpoint is disabled; anything else is tried again later (honouring `Retry-After`),
 * until the schedule runs out or the endpoint has failed for three days, which disables it.
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
  const inFlight = new Set<Promise<void>>();
  const byEndpoint = new Map<string, number>();
  const byOrganization = new Map<string, number>();
  let claiming: Promise<void> = Promise.resolve();
  /** A claim waits behind the running one: later calls join it rather than queue more. */
  let queued = false;
  let stopped = false;
  let attempted = 0;
  /**
   * What claims found nothing for (by what they passed over) since the last look for new
   * work: a finished attempt refills its slot without asking again. New deliveries (a
   * nudge) and the once-a-second fill clear it.
   */
  const foundEmpty = new Set<string>();
  /** Counts the looks anew, so that a claim that started before one does not mark its finding as still current. */
  let looks = 0;

  const under = (counts: Map<string, number>, id: string) => counts.get(id) ?? 0;
  const count = (counts: Map<string, number>, id: string, by: number) => {
    const n = under(counts, id) + by;
    if (n > 0) counts.set(id, n);
    else counts.delete(id);
  };
  const full = (counts: Map<string, number>, cap: number) => [...counts].filter(([, n]) => n >= cap).map(([id]) => id);

  /** One claim into the free slots; how many deliveries it started. */
  async function claimOnce(): Promise<number> {
    const free = options.concurrency - inFlight.size;
    if (free <= 0 || stopped) return 0;
    const skipEndpoints = full(byEndpoint, options.perEndpoint).sort();
    const skipOrganizations = full(byOrganization, options.perOrganization).sort();
    const asked = `${skipOrganizations.join()}|${skipEndpoints.join()}`;
    if (foundEmpty.has(asked)) return 0;
    const look = looks;
    const now = clock();
    const token = randomUUID();
    const terms = {
      now: now.toISOString(),
      leaseUntil: new Date(now.getTime() + options.leaseMs).toISOString(),
      token,
      // An organization whose due endpoints all have their fill here comes without one: room for as many.
      limit: free + skipEndpoints.length,
      skipOrganizations,
      skipEndpoints,
    };
    const claimed = await queries.claimInTurn(db, terms, (turns) => shareOut(free, turns));
    for (const delivery of claimed) start(delivery, token);
    if (claimed.length === 0 && look === looks) foundEmpty.add(asked);
    return claimed.length;
  }

  /** The free slots shared among the endpoints whose turn it is, each within what it and its organization may still take. */
  function shareOut(free: number, turns: readonly queries.Turn[]): Array<[endpointId: string, count: number]> {
    const offered = turns.filter((turn): turn is queries.Turn & { endpoint_id: string } => turn.endpoint_id !== null);
    const each = Math.max(1, Math.floor(free / Math.max(1, offered.length)));
    const shares: Array<[endpointId: string, count: number]> = [];
    let left = free;
    for (const turn of offered) {
      const share = Math.min(each, left, options.perEndpoint - under(byEndpoint, turn.endpoint_id), options.perOrganization - under(byOrganization, turn.organization_id));
      if (share <= 0) continue;
      shares.push([turn.endpoint_id, share]);
      left -= share;
    }
    return shares;
  }

  function start(delivery: queries.ClaimedDelivery, token: string): void {
    count(byEndpoint, delivery.endpoint_id, 1);
    count(byOrganization, delivery.organization_id, 1);
    const running = deliver(delivery, token)
      .catch((err) => logger.error({ err, delivery: delivery.id }, 'could not attempt a webhook delivery'))
      .finally(() => {
        inFlight.delete(running);
        count(byEndpoint, delivery.endpoint_id, -1);
        count(byOrganization, delivery.organization_id, -1);
        attempted++;
        // A slot is free: the next claim need not wait for the tick.
        void refill();
      });
    inFlight.add(running);
  }

  /** Claims into the free slots until a claim finds nothing or no slot is left. Never throws. */
  function refill(): Promise<void> {
    if (stopped || queued) return claiming;
    queued = true;
    claiming = claiming.then(async () => {
      queued = false;
      try {
        while ((await claimOnce()) > 0);
      } catch (err) {
        logger.error({ err }, 'could not claim webhook deliveries');
      }
    });
    return claiming;
  }

  /** Resolves once no claim is running or queued. */
  async function claimsSettled(): Promise<void> {
    for (let last = claiming; ; last = claiming) {
      await last;
      if (last === claiming) return;
    }
  }

  /** Looks for due deliveries anew: new ones were recorded, or the once-a-second job. */
  function fill(): void {
    looks++;
    foundEmpty.clear();
    void refill();
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
        await queries.updateEndpoint(trx, delivery.endpoint_id, { enabled: false, disabled_reason: disable, failing_since: failingSince, turn_at: null, updated_at: at });
        logger.warn({ endpoint: delivery.endpoint_id, reason: disable }, 'disabled a webhook endpoint');
        return;
      }
      // The retry is due before the claim's lease would have run out: its endpoint's turn comes by then.
      if (retryAt !== null) await queries.bringTurnsForward(trx, [delivery.endpoint_id], retryAt);
      if (!delivery.failing_since) await queries.updateEndpoint(trx, delivery.endpoint_id, { failing_since: failingSince });
    });
  }

  return {
    /**
     * Sends every due delivery, slot by slot, and resolves once none is left in flight; how
     * many were attempted meanwhile (tests drive the worker with it). Never throws.
     */
    async tick(): Promise<number> {
      const before = attempted;
      looks++;
      foundEmpty.clear();
      for (;;) {
        await refill();
        await claimsSettled();
        if (inFlight.size === 0) break;
        await Promise.race([...inFlight]);
      }
      return attempted - before;
    },
    /** Claims due deliveries into the free slots without waiting for them (the once-a-second job). */
    fill,
    /** New deliveries were recorded: send them now rather than at the next fill. */
    nudge: fill,
    /** Deliveries in flight in this process. */
    get running(): number {
      return inFlight.size;
    },
    /** Stops claiming and waits for the attempts in flight (each ends within the send timeout). */
    async stop(): Promise<void> {
      stopped = true;
      await claimsSettled();
      await Promise.all([...inFlight]);
    },
  };
}
