import type { Knex } from 'knex';

/**
 * The openai agent's settings per scribe (the environment's are the default) and the trace of
 * every model and tool call a task or session made (src/agents/trace.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('scribes', (t) => {
    t.string('model', 200);
    t.string('model_base_url', 2000);
    // A secret: never shown again, never logged or traced.
    t.string('model_api_key', 500);
    t.boolean('model_vision').notNullable().defaultTo(false);
    t.integer('max_tool_rounds');
    // Input and output tokens one task or one session answer may use; null: no budget.
    t.integer('token_budget');
  });

  await knex.schema.createTable('agent_calls', (t) => {
    t.increments('id');
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.uuid('scribe_id').notNullable().references('scribes.id').onDelete('CASCADE');
    t.uuid('task_id').references('tasks.id').onDelete('CASCADE');
    t.uuid('session_id').references('sessions.id').onDelete('CASCADE');
    // One run of the agent (a task worked once, one session answer): its calls in order.
    t.uuid('run_id').notNullable();
    t.integer('position').notNullable();
    t.enu('kind', ['model', 'tool']).notNullable();
    t.string('name', 200).notNullable();
    // Cut to a few kilobytes (trace.ts).
    t.text('arguments');
    t.text('result');
    t.integer('duration_ms').notNullable();
    t.text('error');
    t.integer('input_tokens');
    t.integer('output_tokens');
    t.string('created_at', 24).notNullable();
    t.index(['task_id', 'id']);
    t.index(['session_id', 'id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('agent_calls');
  // ALTER TABLE … DROP COLUMN, not Knex's dropColumn: on SQLite that rebuilds the table, and
  // dropping the old scribes table would cascade to everything that refers to it.
  for (const column of ['model', 'model_base_url', 'model_api_key', 'model_vision', 'max_tool_rounds', 'token_budget']) await knex.raw(`alter table scribes drop column ${column}`);
}
