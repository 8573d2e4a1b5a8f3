import type { Knex } from 'knex';

/**
 * A scribe's answer is readable while the model writes it: the session message, or the task
 * event, of the answer under way is stored as it grows with `partial` set, and the write that
 * records the answer clears it. Readers of a transcript or a task's history see the flag.
 */
export async function up(knex: Knex): Promise<void> {
  for (const table of ['session_messages', 'task_events']) {
    await knex.schema.alterTable(table, (t) => {
      t.boolean('partial').notNullable().defaultTo(false);
    });
  }
}

export async function down(knex: Knex): Promise<void> {
  // An answer still being written was never recorded: it goes with its flag.
  for (const table of ['session_messages', 'task_events']) {
    await knex(table).where({ partial: true }).delete();
    // ALTER TABLE … DROP COLUMN, not Knex's dropColumn, which rebuilds the table on SQLite.
    await knex.raw(`alter table ${table} drop column partial`);
  }
}
