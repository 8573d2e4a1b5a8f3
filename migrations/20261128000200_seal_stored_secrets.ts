import type { Knex } from 'knex';

/**
 * Seals the secrets stored in clear before sealing existed (scribes' model keys, MCP servers'
 * headers, channel and webhook signing secrets). The key is the install's, so the migrator
 * hands in its secret box (`knex.userParams.secrets`, src/db/migrate.ts); a database with no
 * secret in clear needs none.
 */
interface SecretBox {
  seal(text: string): string;
  open(value: string): string;
}

const SEALED = 'sealed:v1:%';
const COLUMNS: Array<[table: string, column: string]> = [
  ['scribes', 'model_api_key'],
  ['mcp_servers', 'headers'],
  ['channels', 'secret'],
  ['webhook_endpoints', 'secret'],
  ['webhook_endpoints', 'previous_secret'],
];

async function rewrite(knex: Knex, sealed: boolean, change: (box: SecretBox, value: string) => string): Promise<void> {
  const box = knex.userParams.secrets as SecretBox | undefined;
  for (const [table, column] of COLUMNS) {
    const rows: Array<{ id: string; value: string }> = await knex(table)
      .select('id', `${column} as value`)
      .whereNotNull(column)
      .andWhere(column, sealed ? 'like' : 'not like', SEALED);
    if (rows.length === 0) continue;
    if (!box) throw new Error(`${table}.${column} holds secrets to ${sealed ? 'open' : 'seal'}: migrate through the server or the admin CLI, which have the secrets key`);
    for (const row of rows)
      await knex(table)
        .where({ id: row.id })
        .update({ [column]: change(box, row.value) });
  }
}

export async function up(knex: Knex): Promise<void> {
  await rewrite(knex, false, (box, value) => box.seal(value));
}

export async function down(knex: Knex): Promise<void> {
  await rewrite(knex, true, (box, value) => box.open(value));
}
