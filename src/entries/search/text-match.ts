import type { Knex } from 'knex';

/**
 * The one place that decides how "contains this text" becomes SQL. Text is folded to lower
 * case when stored and when searched (see `fold`), so a plain LIKE with escaped wildcards
 * is case-insensitive on SQLite and PostgreSQL alike. A faster index (SQLite FTS5,
 * PostgreSQL trigram) would replace this function and nothing else.
 */
export function whereContains(query: Knex.QueryBuilder, column: string, foldedText: string): void {
  query.whereRaw(`?? like ? escape '\\'`, [column, containsPattern(foldedText)]);
}

/** `%text%` with LIKE's own wildcards escaped, so `50%` and `a_b` mean themselves. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
