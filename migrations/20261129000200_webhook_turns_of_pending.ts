import type { Knex } from 'knex';

/**
 * Deliveries pending before turns existed: each enabled endpoint's turn is its next
 * delivery's time, and each organization's the earliest of its endpoints'.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    update webhook_endpoints set turn_at = (
      select min(d.available_at) from webhook_deliveries d where d.endpoint_id = webhook_endpoints.id and d.status = 'pending')
    where enabled`);
  await knex.raw(`
    update organizations set webhook_turn_at = (
      select min(e.turn_at) from webhook_endpoints e where e.organization_id = organizations.id and e.enabled)`);
}

/** Nothing: the columns go with the migration before. */
export async function down(): Promise<void> {}
