import type { Knex } from 'knex';

/** Rate-limit counters shared by every process on the database (src/http/rate-limit-store.ts). */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('rate_limit_hits', (t) => {
    t.string('key', 255).primary();
    t.integer('hits').notNullable();
    t.string('reset_at', 24).notNullable();
    t.index(['reset_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('rate_limit_hits');
}
