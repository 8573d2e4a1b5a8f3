import type { Knex } from 'knex';
import type { Db } from '../db/knex.js';
import { claimDueInShares, type Queue } from '../db/claims.js';
import { dialectOf } from '../db/dialect.js';
import { readKeysetPage, type KeysetPage, type PageAt } from '../db/keyset.js';
import { insertRows } from '../db/rows.js';

export interface EndpointRow {
  id: string;
  organization_id: string;
  url: string;
  description: string | null;
  /** The event types it receives; null: all of them. */
  events: string[] | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: string | null;
  enabled: boolean;
  disabled_reason: string | null;
  failing_since: string | null;
  /** Its place in its organization's line (see "Whose turn"); null when nothing is pending. */
  turn_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface EventRow {
  id: string;
  organization_id: string;
  type: string;
  body: string;
  created_at: string;
}

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface DeliveryRow {
  id: string;
  event_id: string;
  endpoint_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: number;
  available_at: string;
  claim_token: string | null;
  last_attempt_at: string | null;
  response_status: number | null;
  response_body: string | null;
  /** JSON objects: the headers the last attempt sent (its signature, never a secret) and those it was answered with. */
  request_headers: string | null;
  response_headers: string | null;
  error: string | null;
  duration_ms: number | null;
  delivered_at: string | null;
  created_at: string;
  updated_at: string;
}

export type NewDeliveryRow = Pick<DeliveryRow, 'id' | 'event_id' | 'endpoint_id' | 'event_type' | 'status' | 'attempts' | 'available_at' | 'created_at' | 'updated_at'>;

/** A claimed delivery with what sending it needs. */
export interface ClaimedDelivery extends DeliveryRow {
  body: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: string | null;
  failing_since: string | null;
  organization_id: string;
}

type StoredEndpoint = Omit<EndpointRow, 'events' | 'enabled'> & { events: string | null; enabled: boolean | number };

const fromStored = (row: StoredEndpoint): EndpointRow => ({ ...row, events: row.events === null ? null : (JSON.parse(row.events) as string[]), enabled: Boolean(row.enabled) });
const toStored = (row: Partial<EndpointRow>) => (row.events === undefined ? row : { ...row, events: row.events === null ? null : JSON.stringify(row.events) });

export async function insertEndpoint(db: Db, row: EndpointRow): Promise<void> {
  await db('webhook_endpoints').insert(toStored(row));
}

export async function updateEndpoint(db: Db, id: string, changes: Partial<EndpointRow>): Promise<void> {
  await db('webhook_endpoints').where({ id }).update(toStored(changes));
}

export async function deleteEndpoint(db: Db, id: string): Promise<void> {
  await db('webhook_endpoints').where({ id }).delete();
}

export async function findEndpoint(db: Db, organizationId: string, id: string): Promise<EndpointRow | undefined> {
  const row = await db<StoredEndpoint>('webhook_endpoints').where({ id, organization_id: organizationId }).first();
  return row && fromStored(row);
}

export async function findEndpointById(db: Db, id: string): Promise<EndpointRow | undefined> {
  const row = await db<StoredEndpoint>('webhook_endpoints').where({ id }).first();
  return row && fromStored(row);
}

export async function listEndpoints(db: Db, organizationId: string): Promise<EndpointRow[]> {
  const rows = await db<StoredEndpoint>('webhook_endpoints')
    .where({ organization_id: organizationId })
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ]);
  return rows.map(fromStored);
}

/** The enabled endpoints of these organizations: who an event may go to. */
export async function subscribedEndpoints(db: Db, organizationIds: readonly string[]): Promise<Array<Pick<EndpointRow, 'id' | 'organization_id' | 'events'>>> {
  const rows = await db('webhook_endpoints').whereIn('organization_id', organizationIds).where({ enabled: true }).select('id', 'organization_id', 'events');
  return rows.map((row: { id: string; organization_id: string; events: string | null }) => ({ ...row, events: row.events === null ? null : (JSON.parse(row.events) as string[]) }));
}

/** Writes events and their deliveries, and brings the endpoints' turns forward to the deliveries' time. */
export async function insertEvents(db: Db, events: readonly EventRow[], deliveries: readonly NewDeliveryRow[]): Promise<void> {
  // A dispatcher's batch of 500 receipts may report more than one INSERT takes (db/rows.ts).
  await insertRows(db, 'webhook_events', events);
  await insertRows(db, 'webhook_deliveries', deliveries);
  if (deliveries.length === 0) return;
  // The earliest delivery's time for all of them: a turn may come early, never late.
  const at = deliveries.reduce((earliest, d) => (d.available_at < earliest ? d.available_at : earliest), deliveries[0]!.available_at);
  await bringTurnsForward(db, [...new Set(deliveries.map((d) => d.endpoint_id))], at, { inserted: true });
}

export async function findEvent(db: Db, id: string): Promise<EventRow | undefined> {
  return db<EventRow>('webhook_events').where({ id }).first();
}

/*
 * Whose turn. Deliveries are shared among organizations first, then among each
 * organization's endpoints, so that neither an organization's backlog nor an endpoint that
 * does not answer holds up anyone else's. Each organization and each enabled endpoint has a
 * turn (`webhook_turn_at`, `turn_at`): no later than when its next delivery is due, and,
 * while it has deliveries due, when it was last served; null when nothing is pending. A claim
 * takes the organizations whose turn has come, longest waiting first; of each, the endpoint
 * whose turn has come, longest waiting first; of that, its oldest due deliveries. Then the
 * endpoint and the organization go to the back of the line (their turn is now), or, when
 * nothing of theirs is due any more, wait for their next delivery's time (`passTurns`). All
 * of it is a few index seeks per organization served, however long any backlog is.
 *
 * A turn may be early (a look that finds nothing due puts it right) but never late, or a
 * delivery would wait past its time: whatever makes a delivery due brings its endpoint's
 * and organization's turn forward in its own transaction (`bringTurnsForward`), and a turn
 * is put later only from a look at rows no one else is changing (`passTurns`).
 */

const deliveryQueue: Queue = {
  table: 'webhook_deliveries',
  // (endpoint_id, available_at, id) where status = 'pending'. Only enabled endpoints have a
  // turn, so only their deliveries are claimed.
  index: 'webhook_deliveries_due',
  due: (query, now) => query.whereRaw("status = 'pending'").where('available_at', '<=', now),
  order: ['available_at', 'id'],
  leaseColumn: 'available_at',
};

/** An organization whose turn has come, with its endpoint whose turn has come (null: none that may be taken here). */
export interface Turn {
  organization_id: string;
  endpoint_id: string | null;
}

/** How many of each endpoint's due deliveries a claim takes, given whose turn it is. */
export type ShareOut = (turns: readonly Turn[]) => Array<[endpointId: string, count: number]>;

export interface ClaimTerms {
  now: string;
  leaseUntil: string;
  token: string;
  /** Organizations to look at, at most. */
  limit: number;
  /** Organizations and endpoints passed over: those with their fill under way in this process. */
  skipOrganizations: readonly string[];
  skipEndpoints: readonly string[];
}

/**
 * One claim, in one transaction: whose turn it is, up to each share (`shareOut`) of those
 * endpoints' oldest due deliveries (db/claims.ts), and the turns passed on. Returns the
 * deliveries with the event's body and the endpoint's URL, secrets and organization.
 */
export async function claimInTurn(db: Db, terms: ClaimTerms, shareOut: ShareOut): Promise<ClaimedDelivery[]> {
  return db.transaction(async (trx) => {
    // On SQLite, the write lock before the reads: a read first would fail its first write (busy) if another process wrote meanwhile.
    await dialectOf(trx).writeFirst(trx, 'webhook_endpoints', 'turn_at');
    const turns = await whoseTurn(trx, terms);
    const shares = shareOut(turns);
    const claimed = await claimDueDeliveries(trx, terms, shares);
    const got = (endpointId: string) => claimed.filter((d) => d.endpoint_id === endpointId).length;
    const served = new Set(shares.map(([endpointId]) => endpointId));
    await passTurns(trx, {
      now: terms.now,
      served: shares.filter(([endpointId, share]) => got(endpointId) >= share).map(([endpointId]) => endpointId),
      drained: shares.filter(([endpointId, share]) => got(endpointId) < share).map(([endpointId]) => endpointId),
      // Not those left without a share for want of slots: their turn has not been taken.
      organizations: turns.filter((turn) => turn.endpoint_id === null || served.has(turn.endpoint_id)).map((turn) => turn.organization_id),
    });
    return claimed;
  });
}

/**
 * How far ahead of a claim's `now` a turn still counts as come. A turn put to the back of
 * the line is the time of the claim that put it there, and claims run at once, in this
 * process and others (whose clocks may be a little ahead): one that began later may commit
 * first. Its turns are places in the line, not times to wait for; read as times, the claim
 * that began earlier would find nothing due and wait for the next poll. A turn that waits
 * for a delivery's time comes this much early at worst: the look finds nothing due yet
 * (deliveries are taken at their time exactly) and the turn stays as it was.
 */
const TURN_AHEAD_MS = 1000;

/**
 * Up to `limit` organizations whose turn has come, longest waiting first, each with its
 * enabled endpoint whose turn has come, longest waiting first, passing over those skipped.
 */
async function whoseTurn(db: Db, { now, limit, skipOrganizations, skipEndpoints }: ClaimTerms): Promise<Turn[]> {
  /** Turns up to this have come (`TURN_AHEAD_MS`). */
  const comeBy = new Date(Date.parse(now) + TURN_AHEAD_MS).toISOString();
  // webhook_endpoints_turns: (organization_id, turn_at, id).
  const endpoint = db('webhook_endpoints as e')
    .select('e.id')
    .whereRaw('e.organization_id = o.id')
    .whereRaw('e.enabled')
    .where('e.turn_at', '<=', comeBy)
    .whereNotIn('e.id', skipEndpoints)
    .orderBy(['e.turn_at', 'e.id'])
    .limit(1);
  // organizations_webhook_turns: (webhook_turn_at, id) where webhook_turn_at is not null.
  return db('organizations as o')
    .select('o.id as organization_id', endpoint.as('endpoint_id'))
    .where('o.webhook_turn_at', '<=', comeBy)
    .whereNotIn('o.id', skipOrganizations)
    .orderBy(['o.webhook_turn_at', 'o.id'])
    .limit(limit);
}

/** Claims, of each `[endpointId, count]`, up to `count` of the endpoint's oldest due deliveries, with what sending them needs. */
async function claimDueDeliveries(db: Db, { now, leaseUntil, token }: ClaimTerms, shares: ReadonlyArray<readonly [endpointId: string, count: number]>): Promise<ClaimedDelivery[]> {
  const claimed = await claimDueInShares<DeliveryRow>(db, deliveryQueue, { now, column: 'endpoint_id', shares, set: { claim_token: token, available_at: leaseUntil } });
  if (claimed.length === 0) return [];
  const context = await db('webhook_deliveries as d')
    .join('webhook_events as e', 'e.id', 'd.event_id')
    .join('webhook_endpoints as p', 'p.id', 'd.endpoint_id')
    .whereIn(
      'd.id',
      claimed.map((d) => d.id),
    )
    .select('d.id', 'e.body', 'p.url', 'p.secret', 'p.previous_secret', 'p.previous_secret_until', 'p.failing_since', 'p.organization_id');
  const byId = new Map(context.map((row: { id: string }) => [row.id, row]));
  return claimed.filter((d) => byId.has(d.id)).map((d) => ({ ...d, ...byId.get(d.id) }) as ClaimedDelivery);
}

/**
 * After a claim at `now`, in its transaction: endpoints that gave their whole share
 * (`served`) go to the back of their organization's line; those that gave less (`drained`)
 * wait for their next pending delivery's time (a claimed one's is its lease end, so work of
 * a process that died comes back); then each organization looked at goes to the back of the
 * line, or, when none of its endpoints' turn has come, waits for the earliest. Rows another
 * transaction holds keep their turn: it is early at worst, and the next claim looks again.
 */
async function passTurns(
  trx: Db,
  { now, served, drained, organizations }: { now: string; served: readonly string[]; drained: readonly string[]; organizations: readonly string[] },
): Promise<void> {
  const dialect = dialectOf(trx);
  const back = await dialect.holdRows(trx, 'webhook_endpoints', served, { skipLocked: true });
  if (back.length > 0) await trx('webhook_endpoints').whereIn('id', back).update({ turn_at: now });
  // Held against new deliveries too, so that none arrives between the look and the write.
  const waiting = await dialect.holdRows(trx, 'webhook_endpoints', drained, { exclusive: true, skipLocked: true });
  if (waiting.length > 0) {
    const next = trx('webhook_deliveries as d').min('d.available_at').whereRaw('d.endpoint_id = webhook_endpoints.id').whereRaw("d.status = 'pending'");
    await trx('webhook_endpoints').whereIn('id', waiting).update({ turn_at: next });
  }
  const lines = await dialect.holdRows(trx, 'organizations', organizations, { skipLocked: true });
  if (lines.length > 0) {
    const earliest = trx('webhook_endpoints as e')
      .select(trx.raw('case when min(e.turn_at) < ? then ? else min(e.turn_at) end', [now, now]))
      .whereRaw('e.organization_id = organizations.id')
      .whereRaw('e.enabled');
    await trx('organizations').whereIn('id', lines).update({ webhook_turn_at: earliest });
  }
}

/**
 * Deliveries of these endpoints are due from `at`, in the caller's transaction: their
 * turns, and their organizations', become `at` where they were later (or null). Rows are
 * locked in order of id (db/dialect.ts, `holdRows`). `inserted`: the deliveries were just
 * inserted in this transaction, whose foreign keys already keep `passTurns` from putting
 * these turns later meanwhile, so an endpoint whose turn is early enough is left alone,
 * unlocked. Any other change (a retry's time, a redelivery) locks the endpoint even so, to
 * wait for a `passTurns` that looked before the change.
 */
export async function bringTurnsForward(db: Db, endpointIds: readonly string[], at: string, { inserted = false }: { inserted?: boolean } = {}): Promise<void> {
  const dialect = dialectOf(db);
  const earlier = (column: string) => db.raw('case when ?? is null or ?? > ? then ? else ?? end', [column, column, at, at, column]);
  const later = (column: string) => (q: Knex.QueryBuilder) => q.whereNull(column).orWhere(column, '>', at);
  const endpoints = await dialect.holdRows(db, 'webhook_endpoints', endpointIds, {
    where: (q) => {
      q.whereRaw('enabled');
      if (inserted) q.where(later('turn_at'));
    },
  });
  if (endpoints.length === 0) return;
  const moved: Array<{ organization_id: string; turn_at: string }> = await db('webhook_endpoints')
    .whereIn('id', endpoints)
    .whereRaw('enabled')
    .update({ turn_at: earlier('turn_at') })
    .returning(['organization_id', 'turn_at']);
  // An organization whose endpoint's turn was earlier still was brought forward with it.
  const organizations = await dialect.holdRows(db, 'organizations', [...new Set(moved.filter((row) => row.turn_at === at).map((row) => row.organization_id))]);
  if (organizations.length > 0)
    await db('organizations')
      .whereIn('id', organizations)
      .update({ webhook_turn_at: earlier('webhook_turn_at') });
}

/** Records an attempt's outcome on a delivery still claimed by `token`; false when the claim was lost. */
export async function recordAttempt(db: Db, claim: { id: string; token: string }, changes: Partial<DeliveryRow>): Promise<boolean> {
  const updated = await db('webhook_deliveries')
    .where({ id: claim.id, claim_token: claim.token })
    .update({ ...changes, claim_token: null });
  return updated === 1;
}

export interface DeliveryFilter {
  status?: DeliveryStatus;
  eventType?: string;
}

/** An endpoint's deliveries matching `filter`, unordered. */
function matchingDeliveries(db: Db, endpointId: string, filter: DeliveryFilter) {
  const query = db<DeliveryRow>('webhook_deliveries').where({ endpoint_id: endpointId });
  if (filter.status) query.where({ status: filter.status });
  if (filter.eventType) query.where({ event_type: filter.eventType });
  return query;
}

/** An endpoint's deliveries, newest first, with the event's time. */
export async function listDeliveries(db: Db, endpointId: string, filter: DeliveryFilter, limit: number): Promise<DeliveryRow[]> {
  return matchingDeliveries(db, endpointId, filter)
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(limit);
}

/** A page of an endpoint's deliveries, newest first (the console's pager), with their capped total. */
export function pageDeliveries(db: Db, endpointId: string, filter: DeliveryFilter, at: PageAt, limit: number): Promise<KeysetPage<DeliveryRow>> {
  return readKeysetPage(db, matchingDeliveries(db, endpointId, filter), { columns: ['created_at', 'id'], keyOf: (row: DeliveryRow) => [row.created_at, row.id] }, at, limit);
}

export async function findDelivery(db: Db, endpointId: string, id: string): Promise<DeliveryRow | undefined> {
  return db<DeliveryRow>('webhook_deliveries').where({ id, endpoint_id: endpointId }).first();
}

/** Makes deliveries due again now, from a first attempt (redeliver), and the endpoint's turn come; how many. */
export async function redeliver(db: Db, endpointId: string, which: { id?: string; failedFrom?: string; failedTo?: string }, at: string): Promise<number> {
  const query = db('webhook_deliveries').where({ endpoint_id: endpointId });
  if (which.id) query.where({ id: which.id }).whereNot({ status: 'pending' });
  else query.where({ status: 'failed' }).where('created_at', '>=', which.failedFrom!).where('created_at', '<', which.failedTo!);
  const count = await query.update({ status: 'pending', attempts: 0, available_at: at, claim_token: null, updated_at: at });
  if (count > 0) await bringTurnsForward(db, [endpointId], at);
  return count;
}

/** How many of an endpoint's deliveries are failed in a time range (the console's preview). */
export async function countFailed(db: Db, endpointId: string, from: string, to: string): Promise<number> {
  const row = await db('webhook_deliveries')
    .where({ endpoint_id: endpointId, status: 'failed' })
    .where('created_at', '>=', from)
    .where('created_at', '<', to)
    .count({ n: '*' })
    .first();
  return Number(row?.n ?? 0);
}
