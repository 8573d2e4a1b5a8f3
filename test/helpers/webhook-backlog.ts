import type { Db } from '../../src/db/knex.js';
import { newEventId, newId } from '../../src/lib/ids.js';
import { insertEvents, type EventRow, type NewDeliveryRow } from '../../src/webhooks/queries.js';

/** Rows per insert at most: Knex writes a multi-row insert on SQLite as one compound SELECT, which may have 500 terms. */
const ROWS = 500;

/**
 * `events` events of an organization, each to every one of `endpointIds` and due at `at`,
 * written as the outbox writes them (turns included), 500 deliveries per transaction:
 * a backlog in seconds rather than the minutes its state changes would take.
 */
export async function insertWebhookBacklog(
  db: Db,
  { organizationId, endpointIds, events, at = new Date() }: { organizationId: string; endpointIds: readonly string[]; events: number; at?: Date },
): Promise<void> {
  const created = at.toISOString();
  const chunk = Math.floor(ROWS / endpointIds.length);
  for (let from = 0; from < events; from += chunk) {
    const eventRows: EventRow[] = [];
    const deliveries: NewDeliveryRow[] = [];
    for (let i = from; i < Math.min(events, from + chunk); i++) {
      const id = newEventId(at);
      eventRows.push({
        id,
        organization_id: organizationId,
        type: 'task.done',
        body: JSON.stringify({ id, type: 'task.done', created_at: created, data: { task: { id: String(i) } } }),
        created_at: created,
      });
      for (const endpointId of endpointIds) {
        deliveries.push({
          id: newId(),
          event_id: id,
          endpoint_id: endpointId,
          event_type: 'task.done',
          status: 'pending',
          attempts: 0,
          available_at: created,
          created_at: created,
          updated_at: created,
        });
      }
    }
    await db.transaction((trx) => insertEvents(trx, eventRows, deliveries));
  }
}
