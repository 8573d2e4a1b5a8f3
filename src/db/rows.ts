import type { Knex } from 'knex';
import type { Db } from './knex.js';

/**
 * Rows per INSERT. Knex writes a multi-row INSERT for SQLite as one SELECT per row joined by
 * UNION ALL, and SQLite takes at most 500 of those in a statement; 500 rows of any table here
 * also stay well under either database's limit of bound parameters.
 */
const ROWS_PER_INSERT = 500;

/** Inserts `rows` into `table` in as few statements as both databases take, in the caller's transaction. */
export async function insertRows(db: Db, table: string, rows: readonly object[]): Promise<void> {
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) await db(table).insert(rows.slice(i, i + ROWS_PER_INSERT));
}

/**
 * `case id when ? then cast(? as type) … end`: each row's own value, for one UPDATE of many
 * rows. The value is typed in the statement, as PostgreSQL reads a bare parameter in a CASE as text.
 */
export function caseById(db: Db, ids: readonly string[], type: string, valueFor: (id: string) => Knex.Value): Knex.Raw {
  return db.raw(
    `case id ${ids.map(() => `when ? then cast(? as ${type})`).join(' ')} end`,
    ids.flatMap((id) => [id, valueFor(id)]),
  );
}
