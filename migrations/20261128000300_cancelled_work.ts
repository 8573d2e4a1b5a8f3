import type { Knex } from 'knex';

/**
 * Tasks and sessions can be cancelled: `cancelled` joins the values their status columns (and
 * a task event's) may hold. The columns were made with `enu`, a CHECK constraint on both
 * databases. PostgreSQL replaces the constraint. SQLite cannot alter one, so its stored
 * CREATE TABLE text is edited in place, as SQLite's documentation allows for a change that
 * every row already satisfies (widening a CHECK); rebuilding the tables instead would copy
 * them whole under their foreign keys.
 */
const COLUMNS: Array<[table: string, column: string, values: string[]]> = [
  ['tasks', 'status', ['open', 'in_progress', 'done', 'waiting']],
  ['task_events', 'from_status', ['open', 'in_progress', 'done', 'waiting']],
  ['task_events', 'to_status', ['open', 'in_progress', 'done', 'waiting']],
  ['sessions', 'state', ['queued', 'running', 'waiting', 'completed', 'failed']],
];

const list = (values: string[]) => values.map((v) => `'${v}'`).join(', ');

/** Makes each column's CHECK allow `to(values)` where it allowed `from(values)`. */
async function setChecks(knex: Knex, from: (values: string[]) => string[], to: (values: string[]) => string[]): Promise<void> {
  if (knex.client.config.client === 'pg') {
    for (const [table, column, values] of COLUMNS) {
      await knex.raw(`alter table ${table} drop constraint ${table}_${column}_check`);
      await knex.raw(`alter table ${table} add constraint ${table}_${column}_check check (${column} in (${list(to(values))}))`);
    }
    return;
  }
  // better-sqlite3 opens connections in defensive mode, which forbids writing the schema table.
  const connection = (await knex.client.acquireConnection()) as { unsafeMode(on: boolean): void };
  connection.unsafeMode(true);
  try {
    const [{ schema_version: version }] = (await knex.raw('pragma schema_version')) as [{ schema_version: number }];
    await knex.raw('pragma writable_schema = on');
    for (const [table, column, values] of COLUMNS) {
      const check = (allowed: string[]) => `check (\`${column}\` in (${list(allowed)}))`;
      const [{ sql }] = (await knex.raw('select sql from sqlite_master where type = ? and name = ?', ['table', table])) as [{ sql: string }];
      if (!sql.includes(check(from(values)))) throw new Error(`${table}.${column}: its CHECK constraint is not the one this migration knows`);
      await knex.raw('update sqlite_master set sql = ? where type = ? and name = ?', [sql.replace(check(from(values)), check(to(values))), 'table', table]);
    }
    await knex.raw(`pragma schema_version = ${version + 1}`);
    await knex.raw('pragma writable_schema = off');
    const [{ integrity_check: integrity }] = (await knex.raw('pragma integrity_check')) as [{ integrity_check: string }];
    if (integrity !== 'ok') throw new Error(`integrity check after changing the CHECK constraints: ${integrity}`);
  } finally {
    connection.unsafeMode(false);
  }
}

const withCancelled = (values: string[]) => [...values, 'cancelled'];
const asBefore = (values: string[]) => values;

export async function up(knex: Knex): Promise<void> {
  await setChecks(knex, asBefore, withCancelled);
}

export async function down(knex: Knex): Promise<void> {
  const cancelled = [...(await knex('tasks').where({ status: 'cancelled' }).limit(1).pluck('id')), ...(await knex('sessions').where({ state: 'cancelled' }).limit(1).pluck('id'))];
  if (cancelled.length > 0) throw new Error('cancelled tasks or sessions are stored: they have no status before this migration');
  await knex('task_events').where({ to_status: 'cancelled' }).orWhere({ from_status: 'cancelled' }).delete();
  await setChecks(knex, withCancelled, asBefore);
}
