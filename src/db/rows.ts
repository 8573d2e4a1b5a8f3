import type { Knex } from 'knex';
import type { Db } from './knex.js';
import { dialectOf } from './dialect.js';

/**
 * Rows per INSERT at most. Knex writes a multi-row INSERT for SQLite as one SELECT per row
 * joined by UNION ALL, and SQLite takes at most 500 of those in a statement; 500 rows of any
 * table here also stay well under either database's limit of bound parameters.
 */
const ROWS_PER_INSERT = 500;

/**
 * Inserts `rows` into `table` in as few statements as both databases take, in the caller's
 * transaction. Where the connection keeps statements prepared (SQLite), each row count is a
 * text of its own: there the INSERTs are of a power of two rows each (45 rows: 32, 8, 4 and
 * 1), so that a table's inserts stay a few prepared texts, not one for every size of batch.
 */
export async function insertRows(db: Db, table: string, rows: readonly object[]): Promise<void> {
  const fewTexts = dialectOf(db).keepsStatementsPrepared;
  for (let i = 0; i < rows.length; ) {
    const left = Math.min(ROWS_PER_INSERT, rows.length - i);
    const n = fewTexts ? 2 ** Math.floor(Math.log2(left)) : left;
    await db(table).insert(rows.slice(i, i + n));
    i += n;
  }
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
