import type { Knex } from 'knex';

/** The console's sessions list across all scribes of an organization, newest first (console/queries.ts `listSessions`). */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('sessions', (t) => {
    t.index(['organization_id', 'created_at', 'id'], 'sessions_organization_created');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('sessions', (t) => {
    t.dropIndex(['organization_id', 'created_at', 'id'], 'sessions_organization_created');
  });
}
