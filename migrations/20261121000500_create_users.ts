import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('users', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    // Sign-in is by email alone, so an address belongs to one console user.
    t.string('email', 320).notNullable().unique();
    t.text('password_hash').notNullable();
    t.enu('role', ['admin', 'viewer']).notNullable();
    t.string('created_at', 24).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('users');
}
