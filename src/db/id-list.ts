import type { Knex } from 'knex';

/**
 * `column IN (ids)` with the whole list as one bound JSON parameter: the SQL text stays the
 * same whatever the list's length, so it is prepared once (see the statement cache in
 * knex.ts) and long lists never meet SQLite's limit on parameters. SQLite's json_each;
 * PostgreSQL would use `= any(?)` with an array.
 */
export function whereIdIn(query: Knex.QueryBuilder, column: string, ids: ReadonlyArray<string | number>): void {
  query.whereRaw(`?? in (select value from json_each(?))`, [column, JSON.stringify(ids)]);
}
