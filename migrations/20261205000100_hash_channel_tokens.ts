import { createHash } from 'node:crypto';
import type { Knex } from 'knex';

/**
 * A webhook channel's token is a credential: whoever holds its URL may post work to the scribe
 * (with no signature at all under the preset `none`). It is kept as API keys and secrets are:
 * its SHA-256 (`token_hash`), by which the inbound side finds the channel, and sealed
 * (`token`), which an admin's page and the CLI open to show the URL. Sealed tokens are longer
 * than clear ones, so the column becomes text (SQLite does not enforce the lengths). The key is
 * the install's, handed in by the migrator as for the secrets sealed before (src/db/migrate.ts).
 */
interface SecretBox {
  seal(text: string): string;
  open(value: string): string;
}

const SEALED = 'sealed:v1:%';
const sha256 = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

function secretsOf(knex: Knex, needed: boolean, doing: string): SecretBox | undefined {
  const box = knex.userParams.secrets as SecretBox | undefined;
  if (needed && !box) throw new Error(`channels.token holds tokens to ${doing}: migrate through the server or the admin CLI, which have the secrets key`);
  return box;
}

export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') await knex.raw('alter table channels alter column token type text');
  await knex.schema.alterTable('channels', (t) => {
    t.string('token_hash', 64).unique();
  });
  const rows: Array<{ id: string; token: string }> = await knex('channels').select('id', 'token').whereNotNull('token').andWhere('token', 'not like', SEALED);
  const box = secretsOf(knex, rows.length > 0, 'seal');
  for (const row of rows)
    await knex('channels')
      .where({ id: row.id })
      .update({ token_hash: sha256(row.token), token: box!.seal(row.token) });
}

export async function down(knex: Knex): Promise<void> {
  const rows: Array<{ id: string; token: string }> = await knex('channels').select('id', 'token').where('token', 'like', SEALED);
  const box = secretsOf(knex, rows.length > 0, 'open');
  for (const row of rows)
    await knex('channels')
      .where({ id: row.id })
      .update({ token: box!.open(row.token) });
  await knex.schema.alterTable('channels', (t) => {
    t.dropUnique(['token_hash']);
    t.dropColumn('token_hash');
  });
  if (knex.client.config.client === 'pg') await knex.raw('alter table channels alter column token type varchar(64)');
}
