import type { Knex } from 'knex';

/**
 * Staff accounts run from the console: a user may be disabled (signed out at once, kept for
 * the record), a new password ends their other sessions, and their last sign-in is shown; invitations and password resets are one-time
 * links, of which only a hash is kept. An invited user has no password until they follow
 * their link: their `password_hash` is empty, which no password verifies against.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.string('disabled_at', 24);
    t.string('last_sign_in_at', 24);
    // Sessions signed in before this (a password changed or reset) end at their next request.
    t.string('sessions_valid_from', 24);
  });

  await knex.schema.createTable('password_links', (t) => {
    t.uuid('id').primary();
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.enu('purpose', ['invite', 'reset']).notNullable();
    // SHA-256 of the link's token: 32 random bytes, so a fast hash is enough.
    t.string('token_hash', 64).notNullable().unique();
    t.string('expires_at', 24).notNullable();
    t.string('used_at', 24);
    t.string('created_at', 24).notNullable();
    // A user's open links, withdrawn when a new one is made or the user is disabled.
    t.index(['user_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('password_links');
  // ALTER TABLE … DROP COLUMN, not Knex's dropColumn: on SQLite that rebuilds the table (see 20261121000800).
  for (const column of ['disabled_at', 'last_sign_in_at', 'sessions_valid_from']) await knex.raw(`alter table users drop column ${column}`);
}
