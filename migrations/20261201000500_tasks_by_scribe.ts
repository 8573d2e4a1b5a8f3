import type { Knex } from 'knex';

/** A scribe's tasks, newest first, whatever their status: the API's task pages (tasks/queries.ts `listTasksPage`). */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('tasks', (t) => {
    t.index(['scribe_id', 'created_at', 'id'], 'tasks_scribe_created');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('tasks', (t) => {
    t.dropIndex(['scribe_id', 'created_at', 'id'], 'tasks_scribe_created');
  });
}
