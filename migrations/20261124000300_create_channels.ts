import type { Knex } from 'knex';

/**
 * Inbound channels (src/channels/): a webhook URL or an email address through which senders
 * outside the organization reach one scribe, and the record of each delivery.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('channels', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.uuid('scribe_id').notNullable().references('scribes.id').onDelete('CASCADE');
    t.enu('kind', ['webhook', 'email']).notNullable();
    t.enu('mode', ['task', 'chat']).notNullable();
    t.string('name', 100).notNullable();
    // Webhook: the path's token (shown as the channel's URL), its verification preset and secret.
    t.string('token', 64).unique();
    t.enu('verify', ['none', 'standard-webhooks', 'github', 'slack', 'hmac-sha256']);
    // Verifying an HMAC needs the secret itself; the console shows it once, at creation.
    t.string('secret', 200);
    // Email: the address mail is sent to, lower-cased.
    t.string('address', 254).unique();
    t.boolean('enabled').notNullable().defaultTo(true);
    t.string('created_at', 24).notNullable();
    t.string('updated_at', 24).notNullable();
    t.index(['scribe_id', 'created_at']);
    t.index(['organization_id', 'created_at']);
  });

  await knex.schema.createTable('channel_deliveries', (t) => {
    t.uuid('id').primary();
    t.uuid('channel_id').notNullable().references('channels.id').onDelete('CASCADE');
    t.string('received_at', 24).notNullable();
    // The sending address (webhook) or the envelope sender (email).
    t.string('sender', 320).notNullable();
    t.enu('outcome', ['created', 'replayed', 'refused']).notNullable();
    // The HTTP status answered, or the SMTP reply code.
    t.integer('status').notNullable();
    t.text('reason');
    t.string('request_id', 30).references('requests.id').onDelete('SET NULL');
    t.uuid('session_id').references('sessions.id').onDelete('SET NULL');
    // The sender's delivery id (webhook-id, X-GitHub-Delivery, Slack's retried request): a
    // delivery seen before creates nothing new. Only the delivery that created something holds it.
    t.string('replay_key', 200);
    t.unique(['channel_id', 'replay_key']);
    t.index(['channel_id', 'received_at']);
    t.index(['request_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('channel_deliveries');
  await knex.schema.dropTable('channels');
}
