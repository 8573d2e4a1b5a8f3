import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('scribes', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('slug', 63).notNullable();
    t.string('name', 200).notNullable();
    t.enu('state', ['active', 'powered_off', 'unprovisioned']).notNullable();
    t.string('created_at', 24).notNullable();
    t.string('updated_at', 24).notNullable();
    // Every API call resolves a scribe by (organization, slug).
    t.unique(['organization_id', 'slug']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('scribes');
}
