import type { Knex } from 'knex';

/** The console's sign-in sessions (connect-session-knex's schema) and the audit log. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('console_sessions', (t) => {
    t.string('sid', 255).primary();
    t.json('sess').notNullable();
    t.timestamp('expired').notNullable().index();
  });

  // Every change staff make in the console, and every API call that changes data.
  await knex.schema.createTable('audit_events', (t) => {
    t.increments('id');
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    // `operator`: the admin CLI, run by whoever has the server's shell.
    t.enu('actor_type', ['user', 'api_key', 'operator']).notNullable();
    t.string('actor_id', 64);
    // Kept as written then: the email or key name stays readable after the actor is gone.
    t.string('actor_label', 320).notNullable();
    t.string('action', 64).notNullable();
    t.string('subject_type', 32).notNullable();
    t.string('subject_id', 64).notNullable();
    t.text('detail');
    t.string('created_at', 24).notNullable();
    t.index(['organization_id', 'id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('audit_events');
  await knex.schema.dropTable('console_sessions');
}
