import type { Knex } from 'knex';

/**
 * Install-wide settings, one row a name: the first is which key seals the stored secrets, so a
 * process started with another key stops with a clear error instead of failing secret by
 * secret. Sealed secrets are longer than the clear ones, so their columns become text
 * (SQLite does not enforce the lengths).
 */
const SECRET_COLUMNS: Array<[table: string, column: string, length: number]> = [
  ['scribes', 'model_api_key', 500],
  ['channels', 'secret', 200],
  ['webhook_endpoints', 'secret', 200],
  ['webhook_endpoints', 'previous_secret', 200],
];

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('settings', (t) => {
    t.string('name', 100).primary();
    t.text('value').notNullable();
    t.string('updated_at', 24).notNullable();
  });
  if (knex.client.config.client === 'pg') {
    for (const [table, column] of SECRET_COLUMNS) await knex.raw(`alter table ${table} alter column ${column} type text`);
  }
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') {
    for (const [table, column, length] of SECRET_COLUMNS) await knex.raw(`alter table ${table} alter column ${column} type varchar(${length})`);
  }
  await knex.schema.dropTable('settings');
}
