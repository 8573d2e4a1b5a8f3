import type { Knex } from 'knex';

/**
 * The sessions' reply queue is a partial index on `reply_due`, written `reply_due = 1` before
 * PostgreSQL was supported. PostgreSQL has no `boolean = integer`, so it is now written as the
 * bare column, which both databases read; queries must use the same words for SQLite to pick
 * the index, so installs created before are given the new wording.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists sessions_reply_queue');
  await knex.raw('create index sessions_reply_queue on sessions (created_at) where reply_due');
}

export async function down(): Promise<void> {
  // The old wording cannot be read by PostgreSQL, and the new one serves the same queries.
}
