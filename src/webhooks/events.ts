import type { Db } from '../db/knex.js';
import { readOncePerGroup } from '../db/group-commit.js';
import { newEventId, newId } from '../lib/ids.js';
import type { Clock } from '../lib/clock.js';
import { presentRequest } from '../requests/service.js';
import type { ApiRequestRow } from '../requests/queries.js';
import * as queries from './queries.js';

/** The events an endpoint may subscribe to (docs/webhooks.md, Events). */
export const EVENT_TYPES = [
  'request.fulfilled',
  'request.failed',
  'task.done',
  'task.waiting',
  'task.cancelled',
  'session.waiting',
  'session.completed',
  'session.failed',
  'session.cancelled',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
/** What "Send a test event" sends, to one endpoint only; never subscribed to. */
export const TEST_EVENT = 'webhook.test';

/** An event to report: `data` is the body's `data`; `endpointId` sends it to that endpoint alone (the test event). */
export interface NewEvent {
  organizationId: string;
  type: EventType | typeof TEST_EVENT;
  data: Record<string, unknown>;
  endpointId?: string;
}

/** Writes events in the caller's transaction, nothing when no endpoint wants them; the ids of those written, in order. */
export type RecordEvents = (trx: Db, events: readonly NewEvent[]) => Promise<string[]>;

export const requestEvent = (row: ApiRequestRow & { organization_id: string }, scribeSlug: string): NewEvent => ({
  organizationId: row.organization_id,
  type: row.status === 'fulfilled' ? 'request.fulfilled' : 'request.failed',
  data: { request: presentRequest(row, scribeSlug) },
});

export const taskEvent = (
  task: { id: string; organization_id: string; title: string },
  scribeSlug: string,
  outcome: { status: 'done'; result: string } | { status: 'waiting'; question: string } | { status: 'cancelled' },
): NewEvent => ({
  organizationId: task.organization_id,
  type: `task.${outcome.status}`,
  data: {
    task: {
      id: task.id,
      scribe_id: scribeSlug,
      status: outcome.status,
      title: task.title,
      result: outcome.status === 'done' ? outcome.result : null,
      question: outcome.status === 'waiting' ? outcome.question : null,
    },
  },
});

/** A session's event; `session.waiting` and `session.completed` carry the scribe's reply (its last message). */
export const sessionEvent = (
  session: { id: string; organization_id: string },
  scribeSlug: string,
  state: 'waiting' | 'completed' | 'failed' | 'cancelled',
  reply: string | null = null,
): NewEvent => ({
  organizationId: session.organization_id,
  type: `session.${state}`,
  data: { session: { id: session.id, scribe_id: scribeSlug, status: state, ...(state === 'waiting' || state === 'completed' ? { reply } : {}) } },
});

/**
 * The outbox. `record` writes each event, and one pending delivery per enabled endpoint that
 * subscribes to it, in the caller's transaction: a change that commits has its events, one
 * that rolls back has none, and a crash after the commit loses nothing (the workers find the
 * deliveries). `onRecorded` is called once the transaction has committed, to wake a worker.
 */
export function createOutbox({ clock, onRecorded }: { clock: Clock; onRecorded: (eventId: string) => void }): { record: RecordEvents } {
  return {
    async record(trx, events) {
      if (events.length === 0) return [];
      const organizations = [...new Set(events.map((e) => e.organizationId))];
      // Runs' finishes that share a commit read their organizations' endpoints once (db/group-commit.ts).
      const endpoints = await readOncePerGroup(trx, `subscribed endpoints of ${organizations.sort().join(' ')}`, () => queries.subscribedEndpoints(trx, organizations));
      if (endpoints.length === 0) return [];
      const now = clock();
      const at = now.toISOString();
      const eventRows: queries.EventRow[] = [];
      const deliveries: queries.NewDeliveryRow[] = [];
      for (const event of events) {
        const to = endpoints.filter(
          (e) => e.organization_id === event.organizationId && (event.endpointId ? e.id === event.endpointId : e.events === null || e.events.includes(event.type)),
        );
        if (to.length === 0) continue;
        const id = newEventId(now);
        eventRows.push({
          id,
          organization_id: event.organizationId,
          type: event.type,
          body: JSON.stringify({ id, type: event.type, created_at: at, data: event.data }),
          created_at: at,
        });
        for (const endpoint of to) {
          deliveries.push({
            id: newId(),
            event_id: id,
            endpoint_id: endpoint.id,
            event_type: event.type,
            status: 'pending',
            attempts: 0,
            available_at: at,
            created_at: at,
            updated_at: at,
          });
        }
      }
      if (eventRows.length === 0) return [];
      await queries.insertEvents(trx, eventRows, deliveries);
      afterCommit(trx, () => onRecorded(eventRows[0]!.id));
      return eventRows.map((e) => e.id);
    },
  };
}

/** Runs `fn` once `trx` (the outermost, when it is a savepoint) has committed; at once when it is no transaction. */
function afterCommit(trx: Db, fn: () => void): void {
  type Tx = { executionPromise?: Promise<unknown>; parentTransaction?: Tx };
  let outer = trx as unknown as Tx;
  while (outer.parentTransaction) outer = outer.parentTransaction;
  if (!outer.executionPromise) {
    fn();
    return;
  }
  outer.executionPromise.then(fn, () => {});
}
