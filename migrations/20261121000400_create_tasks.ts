import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('tasks', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.uuid('scribe_id').notNullable().references('scribes.id').onDelete('CASCADE');
    // At most one task per receipt: the last line of defence against double dispatch.
    t.string('request_id', 30).unique().references('requests.id').onDelete('SET NULL');
    t.enu('status', ['open', 'in_progress', 'done', 'waiting']).notNullable();
    t.text('title').notNullable();
    t.text('summary').notNullable();
    t.text('acceptance_criteria');
    t.string('created_at', 24).notNullable();
    t.string('updated_at', 24).notNullable();
    t.index(['scribe_id', 'status', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('tasks');
}
