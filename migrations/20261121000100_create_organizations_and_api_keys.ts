import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('organizations', (t) => {
    t.uuid('id').primary();
    t.string('name', 200).notNullable();
    t.string('created_at', 24).notNullable();
  });

  await knex.schema.createTable('api_keys', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('name', 200).notNullable();
    // Only a SHA-256 of the key is kept; the prefix lets staff tell keys apart.
    t.string('key_hash', 64).notNullable().unique();
    t.string('prefix', 16).notNullable();
    t.string('created_at', 24).notNullable();
    t.string('last_used_at', 24);
    t.string('revoked_at', 24);
    t.index(['organization_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('api_keys');
  await knex.schema.dropTable('organizations');
}
