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

/**
 * The values of a one-column subquery as a list, read from SQLite as one JSON array string:
 * turning a row per id into JavaScript costs about 0.3 µs each, one string for 500 ids a
 * fraction of that (286 → 49 µs for a 500-id range listing; docs/performance.md). SQLite's
 * json_group_array; PostgreSQL would use json_agg.
 */
export async function readIdList<T extends string | number>(db: Knex, subquery: Knex.QueryBuilder, column: string): Promise<T[]> {
  const row = (await db.from(subquery.as('id_list')).first(db.raw('json_group_array(??) as ids', [`id_list.${column}`]))) as { ids: string };
  return JSON.parse(row.ids) as T[];
}
