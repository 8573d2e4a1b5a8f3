import type { Knex } from 'knex';

/**
 * Webhook deliveries shared among organizations, then among each organization's endpoints
 * (webhooks/queries.ts, "Whose turn"). Each organization and each endpoint has a turn: the
 * time from which its deliveries may be due, or, while some are due, when it was last served,
 * so that the one served longest ago goes first. A claim reads a few organizations in turn
 * order, one endpoint of each, and that endpoint's oldest due deliveries: a few index seeks,
 * however long any backlog is.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('organizations', (t) => {
    // Null: no endpoint of the organization has a delivery pending.
    t.string('webhook_turn_at', 24);
  });
  await knex.schema.alterTable('webhook_endpoints', (t) => {
    // Null: nothing pending (or the endpoint is disabled).
    t.string('turn_at', 24);
  });
  // Organizations whose turn has come, longest waiting first; most have none, so the index holds only those with one.
  await knex.raw('create index organizations_webhook_turns on organizations (webhook_turn_at, id) where webhook_turn_at is not null');
  // An organization's endpoints whose turn has come, and the earliest turn among them.
  await knex.raw('create index webhook_endpoints_turns on webhook_endpoints (organization_id, turn_at, id)');
  // An endpoint's oldest due deliveries, and when its next one is due. It replaces the one queue of the whole install.
  await knex.raw("create index webhook_deliveries_due on webhook_deliveries (endpoint_id, available_at, id) where status = 'pending'");
  await knex.raw('drop index webhook_deliveries_queue');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("create index webhook_deliveries_queue on webhook_deliveries (available_at, id) where status = 'pending'");
  await knex.raw('drop index webhook_deliveries_due');
  await knex.raw('drop index webhook_endpoints_turns');
  await knex.raw('drop index organizations_webhook_turns');
  // ALTER TABLE … DROP COLUMN, not Knex's dropColumn, which rebuilds the table on SQLite.
  await knex.raw('alter table webhook_endpoints drop column turn_at');
  await knex.raw('alter table organizations drop column webhook_turn_at');
}
