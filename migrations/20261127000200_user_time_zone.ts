import type { Knex } from 'knex';

/**
 * Each console user's time zone (IANA name), in which the console writes every time for
 * them. Null until their browser reports one at sign-in; null reads as UTC.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.string('time_zone', 64);
  });
}

export async function down(knex: Knex): Promise<void> {
  // ALTER TABLE … DROP COLUMN, not Knex's dropColumn: on SQLite that rebuilds the table (see 20261121000800).
  await knex.raw('alter table users drop column time_zone');
}
