import type { Knex } from 'knex';

/**
 * What the agent runtime works on: chat sessions with their transcripts, and tasks with
 * the history of their status changes. Both carry the runtime's lease columns
 * (`claim_token`, `lease_until`, `attempts`), as receipts do for the dispatcher.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('scribes', (t) => {
    t.enu('agent', ['builtin', 'openai']).notNullable().defaultTo('builtin');
    t.text('instructions').notNullable().defaultTo('');
  });

  await knex.schema.createTable('sessions', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.uuid('scribe_id').notNullable().references('scribes.id').onDelete('CASCADE');
    t.enu('state', ['queued', 'running', 'waiting', 'completed', 'failed']).notNullable();
    // True while a user or staff message awaits the scribe's answer. Separate from state:
    // a session ended at once (end_session_immediately) is completed yet still answered.
    t.boolean('reply_due').notNullable();
    t.text('error_message');
    t.uuid('claim_token');
    t.string('lease_until', 24);
    t.integer('attempts').notNullable().defaultTo(0);
    t.string('created_at', 24).notNullable();
    t.string('updated_at', 24).notNullable();
    // The scribe page's sessions list, newest first.
    t.index(['scribe_id', 'created_at', 'id'], 'sessions_scribe_created');
  });
  // The runtime's queue of sessions to answer; only those, so it stays small.
  await knex.schema.alterTable('sessions', (t) => {
    t.index(['created_at'], 'sessions_reply_queue', { predicate: knex.whereRaw('reply_due') });
  });

  await knex.schema.createTable('session_messages', (t) => {
    t.increments('id');
    t.uuid('session_id').notNullable().references('sessions.id').onDelete('CASCADE');
    t.enu('author', ['user', 'scribe', 'staff', 'system']).notNullable();
    t.text('text').notNullable();
    t.string('created_at', 24).notNullable();
    t.index(['session_id', 'id']);
  });

  await knex.schema.alterTable('tasks', (t) => {
    t.text('result');
    t.text('last_error');
    t.uuid('claim_token');
    t.string('lease_until', 24);
    t.integer('attempts').notNullable().defaultTo(0);
  });
  await knex.schema.alterTable('tasks', (t) => {
    t.index(['created_at'], 'tasks_work_queue', { predicate: knex.whereRaw("status in ('open', 'in_progress')") });
  });

  // Every status change of a task, with the text that came with it (result, question, input, error).
  await knex.schema.createTable('task_events', (t) => {
    t.increments('id');
    t.uuid('task_id').notNullable().references('tasks.id').onDelete('CASCADE');
    t.enu('from_status', ['open', 'in_progress', 'done', 'waiting']);
    t.enu('to_status', ['open', 'in_progress', 'done', 'waiting']).notNullable();
    t.enu('author', ['scribe', 'staff', 'system']).notNullable();
    t.text('text');
    t.string('created_at', 24).notNullable();
    t.index(['task_id', 'id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('task_events');
  await knex.schema.alterTable('tasks', (t) => {
    t.dropIndex(['created_at'], 'tasks_work_queue');
  });
  // ALTER TABLE … DROP COLUMN, not Knex's dropColumns: on SQLite that rebuilds the table,
  // and dropping the old scribes table inside the migration's transaction cascades to
  // every request and task (see migration 20261121001200).
  for (const column of ['result', 'last_error', 'claim_token', 'lease_until', 'attempts']) await knex.raw(`alter table tasks drop column ${column}`);
  await knex.schema.dropTable('session_messages');
  await knex.schema.dropTable('sessions');
  for (const column of ['agent', 'instructions']) await knex.raw(`alter table scribes drop column ${column}`);
}
