import type { Knex } from 'knex';

/**
 * Who ran a schedule now (a manual fire): the actor's type (`user`, `operator` for the
 * admin CLI) and label, as the audit log names them. Null for fires of the clock, and for
 * manual fires recorded before this.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('schedule_fires', (t) => {
    t.string('run_by_type', 16);
    t.string('run_by', 320);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('schedule_fires', (t) => {
    t.dropColumn('run_by_type');
    t.dropColumn('run_by');
  });
}
