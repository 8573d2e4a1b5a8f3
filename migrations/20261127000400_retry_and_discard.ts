import type { Knex } from 'knex';

/**
 * Staff act on failures from the console: a failed receipt is retried as a new receipt that
 * names it (`retry_of`), and a failure staff have looked at is discarded: it stays what it
 * is (clients still poll it), only marked as dealt with.
 */
export async function up(knex: Knex): Promise<void> {
  for (const table of ['requests', 'tasks', 'sessions']) {
    await knex.schema.alterTable(table, (t) => {
      t.string('discarded_at', 24);
    });
  }
  // Unique: one retry per failed receipt, however many staff (or processes) press the button;
  // the index is also how a receipt's page finds its retry. No foreign key: adding one makes
  // Knex rebuild the table on SQLite.
  await knex.schema.alterTable('requests', (t) => {
    t.string('retry_of', 30);
    t.unique(['retry_of'], { indexName: 'requests_one_retry' });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('requests', (t) => {
    t.dropUnique(['retry_of'], 'requests_one_retry');
  });
  // ALTER TABLE … DROP COLUMN, not Knex's dropColumn, which rebuilds the table on SQLite.
  await knex.raw('alter table requests drop column retry_of');
  for (const table of ['requests', 'tasks', 'sessions']) await knex.raw(`alter table ${table} drop column discarded_at`);
}
