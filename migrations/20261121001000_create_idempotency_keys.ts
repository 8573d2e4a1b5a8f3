import type { Knex } from 'knex';

/** Idempotency-Key records (Stripe's semantics), per organization, kept 24 hours. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('idempotency_keys', (t) => {
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('key', 255).notNullable();
    // SHA-256 of the method, path and canonical JSON body: what "the same request" means.
    t.string('request_hash', 64).notNullable();
    t.enu('state', ['in_progress', 'done']).notNullable();
    t.integer('response_status');
    t.text('response_body');
    t.string('created_at', 24).notNullable();
    t.string('expires_at', 24).notNullable();
    t.primary(['organization_id', 'key']);
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('idempotency_keys');
}
