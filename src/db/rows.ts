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
