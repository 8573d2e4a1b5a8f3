import type { Db } from '../db/knex.js';
import { claimDue, type Queue } from '../db/claims.js';
import { readKeysetPage, type KeysetPage, type PageAt } from '../db/keyset.js';

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
  const rows = await db<StoredEndpoint>('webhook_endpoints').where({ organization_id: organizationId }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]);
  return rows.map(fromStored);
}

/** The enabled endpoints of these organizations: who an event may go to. */
export async function subscribedEndpoints(db: Db, organizationIds: readonly string[]): Promise<Array<Pick<EndpointRow, 'id' | 'organization_id' | 'events'>>> {
  const rows = await db('webhook_endpoints').whereIn('organization_id', organizationIds).where({ enabled: true }).select('id', 'organization_id', 'events');
  return rows.map((row: { id: string; organization_id: string; events: string | null }) => ({ ...row, events: row.events === null ? null : (JSON.parse(row.events) as string[]) }));
}

export async function insertEvents(db: Db, events: readonly EventRow[], deliveries: readonly NewDeliveryRow[]): Promise<void> {
  await db('webhook_events').insert(events);
  await db('webhook_deliveries').insert(deliveries);
}

export async function findEvent(db: Db, id: string): Promise<EventRow | undefined> {
  return db<EventRow>('webhook_events').where({ id }).first();
}

const deliveryQueue: Queue = {
  table: 'webhook_deliveries',
  // webhook_deliveries_queue: (available_at, id) where status = 'pending'; only enabled endpoints' deliveries are due.
  due: (query, now) =>
    query
      .whereRaw("status = 'pending'")
      .where('available_at', '<=', now)
      .whereIn('endpoint_id', (enabled) => enabled.select('id').from('webhook_endpoints').where({ enabled: true })),
  order: ['available_at', 'id'],
  leaseColumn: 'available_at',
};

/** Claims up to `limit` due deliveries (db/claims.ts), with the event's body and the endpoint's URL and secrets. */
export async function claimDueDeliveries(db: Db, { now, leaseUntil, token, limit }: { now: string; leaseUntil: string; token: string; limit: number }): Promise<ClaimedDelivery[]> {
  const claimed = await claimDue<DeliveryRow>(db, deliveryQueue, { now, limit, set: { claim_token: token, available_at: leaseUntil } });
  if (claimed.length === 0) return [];
  const context = await db('webhook_deliveries as d')
    .join('webhook_events as e', 'e.id', 'd.event_id')
    .join('webhook_endpoints as p', 'p.id', 'd.endpoint_id')
    .whereIn(
      'd.id',
      claimed.map((d) => d.id),
    )
    .select('d.id', 'e.body', 'p.url', 'p.secret', 'p.previous_secret', 'p.previous_secret_until', 'p.failing_since');
  const byId = new Map(context.map((row: { id: string }) => [row.id, row]));
  return claimed.filter((d) => byId.has(d.id)).map((d) => ({ ...d, ...byId.get(d.id) }) as ClaimedDelivery);
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
  return matchingDeliveries(db, endpointId, filter).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(limit);
}

/** A page of an endpoint's deliveries, newest first (the console's pager), with their capped total. */
export function pageDeliveries(db: Db, endpointId: string, filter: DeliveryFilter, at: PageAt, limit: number): Promise<KeysetPage<DeliveryRow>> {
  return readKeysetPage(db, matchingDeliveries(db, endpointId, filter), { columns: ['created_at', 'id'], keyOf: (row: DeliveryRow) => [row.created_at, row.id] }, at, limit);
}

export async function findDelivery(db: Db, endpointId: string, id: string): Promise<DeliveryRow | undefined> {
  return db<DeliveryRow>('webhook_deliveries').where({ id, endpoint_id: endpointId }).first();
}

/** Makes deliveries due again now, from a first attempt (redeliver); how many. */
export async function redeliver(db: Db, endpointId: string, which: { id?: string; failedFrom?: string; failedTo?: string }, at: string): Promise<number> {
  const query = db('webhook_deliveries').where({ endpoint_id: endpointId });
  if (which.id) query.where({ id: which.id }).whereNot({ status: 'pending' });
  else query.where({ status: 'failed' }).where('created_at', '>=', which.failedFrom!).where('created_at', '<', which.failedTo!);
  return query.update({ status: 'pending', attempts: 0, available_at: at, claim_token: null, updated_at: at });
}

/** How many of an endpoint's deliveries are failed in a time range (the console's preview). */
export async function countFailed(db: Db, endpointId: string, from: string, to: string): Promise<number> {
  const row = await db('webhook_deliveries').where({ endpoint_id: endpointId, status: 'failed' }).where('created_at', '>=', from).where('created_at', '<', to).count({ n: '*' }).first();
  return Number(row?.n ?? 0);
}
