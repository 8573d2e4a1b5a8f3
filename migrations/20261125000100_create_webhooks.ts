import type { Knex } from 'knex';

/**
 * Outbound webhooks (src/webhooks/): an organization's endpoints, the events written in the
 * same transaction as the changes they report (the outbox), and one delivery per event and
 * endpoint, which the delivery workers claim like any other queue (db/claims.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_endpoints', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('url', 2000).notNullable();
    t.string('description', 200);
    // A JSON array of event types; null: every type.
    t.text('events');
    // `whsec_<base64>`: signing needs the secret itself. Shown once, at creation or rotation.
    t.string('secret', 200).notNullable();
    // After a rotation, the old secret also signs until this time (both signatures are sent).
    t.string('previous_secret', 200);
    t.string('previous_secret_until', 24);
    t.boolean('enabled').notNullable().defaultTo(true);
    // Why the service turned the endpoint off (410, or failing for three days); null when staff did.
    t.string('disabled_reason', 200);
    // When its deliveries started failing without a success since; null while healthy.
    t.string('failing_since', 24);
    t.string('created_at', 24).notNullable();
    t.string('updated_at', 24).notNullable();
    t.index(['organization_id', 'created_at']);
  });

  await knex.schema.createTable('webhook_events', (t) => {
    // `evt_<ULID>`: the webhook-id of every delivery of the event.
    t.string('id', 30).primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('type', 40).notNullable();
    // The exact body POSTed, so every retry sends (and signs) the same bytes.
    t.text('body').notNullable();
    t.string('created_at', 24).notNullable();
    t.index(['organization_id', 'id']);
  });

  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.uuid('id').primary();
    t.string('event_id', 30).notNullable().references('webhook_events.id').onDelete('CASCADE');
    t.uuid('endpoint_id').notNullable().references('webhook_endpoints.id').onDelete('CASCADE');
    // Copied from the event, so the endpoint's page filters without a join.
    t.string('event_type', 40).notNullable();
    t.enu('status', ['pending', 'delivered', 'failed']).notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    // When the next attempt is due; a claim moves it forward by the lease.
    t.string('available_at', 24).notNullable();
    t.string('claim_token', 36);
    // The last attempt: when, what the endpoint answered (the first bytes), how long it took.
    t.string('last_attempt_at', 24);
    t.integer('response_status');
    t.string('response_body', 1000);
    t.string('error', 500);
    t.integer('duration_ms');
    t.string('delivered_at', 24);
    t.string('created_at', 24).notNullable();
    t.string('updated_at', 24).notNullable();
    t.unique(['event_id', 'endpoint_id']);
    t.index(['endpoint_id', 'created_at']);
  });
  // The workers' queue: pending deliveries by due time.
  await knex.raw("create index webhook_deliveries_queue on webhook_deliveries (available_at, id) where status = 'pending'");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_deliveries');
  await knex.schema.dropTable('webhook_events');
  await knex.schema.dropTable('webhook_endpoints');
}
