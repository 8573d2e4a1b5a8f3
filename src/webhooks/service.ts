import type { Db } from '../db/knex.js';
import { dialectOf } from '../db/dialect.js';
import type { PageAt } from '../db/keyset.js';
import type { Actor, AuditLog } from '../audit/service.js';
import { type Clock, isoNow } from '../lib/clock.js';
import { UUID_PATTERN, newId } from '../lib/ids.js';
import { NotFoundError, ValidationError } from '../http/errors.js';
import type { AddressPolicy } from '../net/address-policy.js';
import { checkUserUrl } from '../net/user-url.js';
import type { SecretBox } from '../secrets/secret-box.js';
import { EVENT_TYPES, TEST_EVENT, type RecordEvents } from './events.js';
import * as queries from './queries.js';
import { DELIVERY_STATUSES, type DeliveryFilter, type DeliveryRow, type EndpointRow } from './queries.js';
import { generateSecret } from './sign.js';

export const messages = {
  endpointNotFound: 'Webhook endpoint not found',
  deliveryNotFound: 'Delivery not found',
  deliveryPending: 'This delivery is still being tried: redeliver it once it has been delivered or has failed',
  invalidUrl: 'URL must be an http:// or https:// URL without credentials, at most 2000 characters',
  privateAddress: 'URL must not point at a private or local address (WEBHOOKS_ALLOW_PRIVATE=true allows it)',
  unknownEvent: (type: string) => `Unknown event type: ${type} (expected ${EVENT_TYPES.join(', ')})`,
  noEvents: 'Choose at least one event type, or all of them',
  descriptionTooLong: 'Description must be at most 200 characters',
  invalidRange: 'Give a time range: from before to',
  endpointDisabled: 'This endpoint is disabled; enable it to send',
};

/** How long the old secret still signs after a rotation. */
export const ROTATION_GRACE_MS = 24 * 60 * 60 * 1000;

export interface EndpointInput {
  url?: string;
  /** Event types; undefined or null: all of them. */
  events?: readonly string[] | null;
  description?: string | null;
  enabled?: boolean;
}

export type WebhookService = ReturnType<typeof createWebhookService>;

/**
 * An organization's webhook endpoints, managed by staff (console) and the operator (CLI),
 * every change audited; their deliveries, test events and redelivery. Sending is the
 * queue's (queue.ts); events come from the outbox (events.ts).
 */
export function createWebhookService({
  db,
  clock,
  audit,
  policy,
  secrets,
  recordEvents,
}: {
  db: Db;
  clock: Clock;
  audit: AuditLog;
  policy: AddressPolicy;
  /** Seals the signing secrets where they are stored. */
  secrets: SecretBox;
  recordEvents: RecordEvents;
}) {
  async function get(organizationId: string, id: string): Promise<EndpointRow> {
    const endpoint = UUID_PATTERN.test(id) ? await queries.findEndpoint(db, organizationId, id) : undefined;
    if (!endpoint) throw new NotFoundError(messages.endpointNotFound);
    return endpoint;
  }

  const checkUrl = (value: string) => checkUserUrl(value, policy, { invalid: messages.invalidUrl, privateAddress: messages.privateAddress });

  function checkEvents(events: readonly string[] | null | undefined): string[] | null {
    if (events === undefined || events === null) return null;
    const chosen = [...new Set(events.map((e) => e.trim()).filter(Boolean))];
    if (chosen.length === 0) throw new ValidationError(messages.noEvents);
    const unknown = chosen.find((e) => !(EVENT_TYPES as readonly string[]).includes(e));
    if (unknown) throw new ValidationError(messages.unknownEvent(unknown));
    return chosen.length === EVENT_TYPES.length ? null : EVENT_TYPES.filter((e) => chosen.includes(e));
  }

  function checkDescription(description: string | null | undefined): string | null {
    const text = description?.trim() || null;
    if (text && text.length > 200) throw new ValidationError(messages.descriptionTooLong);
    return text;
  }

  const describe = (endpoint: Pick<EndpointRow, 'url'>) => endpoint.url;

  return {
    /** A new endpoint; its secret is returned here and shown this once. */
    async create(actor: Actor, input: EndpointInput): Promise<{ endpoint: EndpointRow; secret: string }> {
      const at = isoNow(clock);
      const secret = generateSecret();
      const endpoint: EndpointRow = {
        id: newId(),
        organization_id: actor.organizationId,
        url: checkUrl(input.url ?? ''),
        description: checkDescription(input.description),
        events: checkEvents(input.events),
        secret: secrets.seal(secret),
        previous_secret: null,
        previous_secret_until: null,
        enabled: input.enabled ?? true,
        disabled_reason: null,
        failing_since: null,
        turn_at: null,
        created_at: at,
        updated_at: at,
      };
      await db.transaction(async (trx) => {
        await queries.insertEndpoint(trx, endpoint);
        await audit.record(actor, 'webhook.create', { type: 'webhook', id: endpoint.id }, describe(endpoint), trx);
      });
      return { endpoint, secret };
    },

    /** Changes the URL, event filter, description or enabled flag; enabling clears why it was disabled. */
    async update(actor: Actor, id: string, input: EndpointInput): Promise<EndpointRow> {
      const endpoint = await get(actor.organizationId, id);
      const changes: Partial<EndpointRow> = { updated_at: isoNow(clock) };
      if (input.url !== undefined) changes.url = checkUrl(input.url);
      if (input.events !== undefined) changes.events = checkEvents(input.events);
      if (input.description !== undefined) changes.description = checkDescription(input.description);
      if (input.enabled !== undefined) {
        changes.enabled = input.enabled;
        // A disabled endpoint has no turn; enabled, its pending deliveries may be due at once.
        if (input.enabled) Object.assign(changes, { disabled_reason: null, failing_since: null });
        else changes.turn_at = null;
      }
      // An edit and a switch on or off are separate entries, so the log can be filtered by either.
      const actions: string[] = [];
      if (input.url !== undefined || input.events !== undefined || input.description !== undefined) actions.push('webhook.update');
      if (input.enabled !== undefined && input.enabled !== endpoint.enabled) actions.push(input.enabled ? 'webhook.enable' : 'webhook.disable');
      await db.transaction(async (trx) => {
        await queries.updateEndpoint(trx, id, changes);
        if (input.enabled && !endpoint.enabled) await queries.bringTurnsForward(trx, [id], changes.updated_at!);
        for (const action of actions) await audit.record(actor, action, { type: 'webhook', id }, describe({ url: changes.url ?? endpoint.url }), trx);
      });
      return { ...endpoint, ...changes };
    },

    /** Deletes the endpoint and its deliveries; the audit log keeps its history. */
    async remove(actor: Actor, id: string): Promise<void> {
      const endpoint = await get(actor.organizationId, id);
      await db.transaction(async (trx) => {
        await queries.deleteEndpoint(trx, id);
        await audit.record(actor, 'webhook.delete', { type: 'webhook', id }, describe(endpoint), trx);
      });
    },

    /** A new secret, returned (and shown) once; the old one also signs for a day. */
    async rotateSecret(actor: Actor, id: string): Promise<{ secret: string; previousValidUntil: string }> {
      const endpoint = await get(actor.organizationId, id);
      const now = clock();
      const secret = generateSecret();
      const previousValidUntil = new Date(now.getTime() + ROTATION_GRACE_MS).toISOString();
      await db.transaction(async (trx) => {
        await queries.updateEndpoint(trx, id, {
          secret: secrets.seal(secret),
          previous_secret: endpoint.secret,
          previous_secret_until: previousValidUntil,
          updated_at: now.toISOString(),
        });
        await audit.record(actor, 'webhook.rotate_secret', { type: 'webhook', id }, `old secret valid until ${previousValidUntil}`, trx);
      });
      return { secret, previousValidUntil };
    },

    /** Sends a `webhook.test` event to this endpoint alone; the event's id. */
    async sendTest(actor: Actor, id: string): Promise<{ eventId: string }> {
      const endpoint = await get(actor.organizationId, id);
      if (!endpoint.enabled) throw new ValidationError(messages.endpointDisabled);
      return db.transaction(async (trx) => {
        // The outbox reads the endpoints before it writes: on SQLite, take the write lock first (as claims do).
        await dialectOf(trx).writeFirst(trx, 'webhook_endpoints', 'turn_at');
        const [eventId] = await recordEvents(trx, [{ organizationId: endpoint.organization_id, type: TEST_EVENT, endpointId: id, data: { endpoint: { id, url: endpoint.url } } }]);
        await audit.record(actor, 'webhook.test', { type: 'webhook', id }, describe(endpoint), trx);
        return { eventId: eventId! };
      });
    },

    /** Tries one delivery again from its first attempt (same event, same webhook-id); one still pending is refused. */
    async redeliver(actor: Actor, endpointId: string, deliveryId: string): Promise<void> {
      const endpoint = await get(actor.organizationId, endpointId);
      const delivery = UUID_PATTERN.test(deliveryId) ? await queries.findDelivery(db, endpointId, deliveryId) : undefined;
      if (!delivery) throw new NotFoundError(messages.deliveryNotFound);
      await db.transaction(async (trx) => {
        // Checked as it is changed: one found pending is under way, and its attempts count on.
        if ((await queries.redeliver(trx, endpointId, { id: deliveryId }, isoNow(clock))) === 0) throw new ValidationError(messages.deliveryPending);
        await audit.record(actor, 'webhook.redeliver', { type: 'webhook', id: endpoint.id }, `${delivery.event_type} ${delivery.event_id}`, trx);
      });
    },

    /** Tries every failed delivery made in [from, to) again; how many. */
    async redeliverFailed(actor: Actor, endpointId: string, range: { from: string; to: string }): Promise<number> {
      await get(actor.organizationId, endpointId);
      const { from, to } = checkRange(range);
      return db.transaction(async (trx) => {
        const count = await queries.redeliver(trx, endpointId, { failedFrom: from, failedTo: to }, isoNow(clock));
        await audit.record(actor, 'webhook.redeliver', { type: 'webhook', id: endpointId }, `${count} failed deliveries from ${from} to ${to}`, trx);
        return count;
      });
    },

    /** How many deliveries `redeliverFailed` would try again (the console's preview). */
    async countFailed(organizationId: string, endpointId: string, range: { from: string; to: string }): Promise<number> {
      await get(organizationId, endpointId);
      const { from, to } = checkRange(range);
      return queries.countFailed(db, endpointId, from, to);
    },

    get,

    /** The endpoint's organization, for the admin CLI (which names an endpoint by id alone). */
    async organizationOf(id: string): Promise<string> {
      const endpoint = UUID_PATTERN.test(id) ? await queries.findEndpointById(db, id) : undefined;
      if (!endpoint) throw new NotFoundError(messages.endpointNotFound);
      return endpoint.organization_id;
    },

    list: (organizationId: string) => queries.listEndpoints(db, organizationId),

    deliveries(endpointId: string, filter: DeliveryFilter = {}, limit = 50): Promise<DeliveryRow[]> {
      if (filter.status && !DELIVERY_STATUSES.includes(filter.status)) return Promise.resolve([]);
      return queries.listDeliveries(db, endpointId, filter, limit);
    },

    /** A page of the endpoint's deliveries, newest first, for the console's pager. */
    deliveryPage: (endpointId: string, filter: DeliveryFilter, at: PageAt, limit: number) => queries.pageDeliveries(db, endpointId, filter, at, limit),

    event: (id: string) => queries.findEvent(db, id),

    /** One delivery of the organization's endpoint with its event's body: the console's request-and-answer page. */
    async delivery(organizationId: string, endpointId: string, id: string): Promise<{ endpoint: EndpointRow; delivery: DeliveryRow; body: string }> {
      const endpoint = await get(organizationId, endpointId);
      const delivery = UUID_PATTERN.test(id) ? await queries.findDelivery(db, endpoint.id, id) : undefined;
      if (!delivery) throw new NotFoundError(messages.deliveryNotFound);
      const event = await queries.findEvent(db, delivery.event_id);
      return { endpoint, delivery, body: event?.body ?? '' };
    },
  };
}

/** A time range as ISO timestamps, `from` before `to`. */
function checkRange(range: { from: string; to: string }): { from: string; to: string } {
  const from = Date.parse(range.from);
  const to = Date.parse(range.to);
  if (Number.isNaN(from) || Number.isNaN(to) || from >= to) throw new ValidationError(messages.invalidRange);
  return { from: new Date(from).toISOString(), to: new Date(to).toISOString() };
}
