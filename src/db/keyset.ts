import type { Knex } from 'knex';

/**
 * Keyset paging of the console's newest-first lists, for every list alike. A list is
 * ordered by its key columns, descending (`created_at, id`, or an `id` alone); a page is
 * read from the start, strictly older than a key (`before`), or strictly newer than one
 * (`after`: read ascending from it, then turned round), so paging forwards and back gives
 * the same pages whatever was added meanwhile at the top.
 */

export type KeyValue = string | number;

/** Where a page starts: the first page (neither), older than a key, or newer than one. */
export interface PageAt {
  before?: readonly KeyValue[];
  after?: readonly KeyValue[];
}

export interface KeysetPage<T> {
  items: T[];
  /** The key to read the newer page after (`after=`), or null when nothing is newer. */
  newer: KeyValue[] | null;
  /** The key to read the older page before (`before=`), or null when nothing is older. */
  older: KeyValue[] | null;
  /** True on the list's first page. */
  atStart: boolean;
  /** How many items the filters give in all, counted up to the cap: `more` when there are more than `count`. */
  total: { count: number; more: boolean } | null;
}

export interface KeysetList<T> {
  /** The key columns as the query names them, most significant first: `['r.created_at', 'r.id']`. */
  columns: readonly string[];
  /** A row's values of those columns. */
  keyOf(row: T): KeyValue[];
}

/** Lists that count their total count it up to this: a count stays cheap however long the list. */
export const COUNT_CAP = 10_000;

/**
 * One page of `query` (filtered, not ordered) and, when `countTotal`, the capped count of
 * everything it matches. A previous page that would come out short (items were removed, or
 * the cursor was near the top) is the first page instead, whole.
 */
export async function readKeysetPage<T>(
  db: Knex,
  query: Knex.QueryBuilder,
  list: KeysetList<T>,
  at: PageAt,
  limit: number,
  { countTotal = true }: { countTotal?: boolean } = {},
): Promise<KeysetPage<T>> {
  const total = countTotal ? countUpTo(db, query, COUNT_CAP) : Promise.resolve(null);
  const read = (direction: 'asc' | 'desc', from?: { op: '<' | '>'; key: readonly KeyValue[] }) => {
    const page = query.clone();
    if (from) page.whereRaw(`${tuple(list.columns.length, '??')} ${from.op} ${tuple(list.columns.length, '?')}`, [...list.columns, ...from.key]);
    return page.orderBy(list.columns.map((column) => ({ column, order: direction }))).limit(limit + 1) as Promise<T[]>;
  };
  const keyOf = (row: T | undefined) => (row === undefined ? null : list.keyOf(row));
  const page = async (): Promise<Omit<KeysetPage<T>, 'total'>> => {
    if (at.after) {
      const rows = await read('asc', { op: '>', key: at.after });
      if (rows.length >= limit) {
        const items = rows.slice(0, limit).reverse();
        return { items, newer: rows.length > limit ? keyOf(items[0]) : null, older: keyOf(items.at(-1)), atStart: rows.length === limit };
      }
    }
    const before = at.after ? undefined : at.before;
    const rows = await read('desc', before && { op: '<', key: before });
    const items = rows.slice(0, limit);
    return { items, newer: before ? keyOf(items[0]) : null, older: rows.length > limit ? keyOf(items.at(-1)) : null, atStart: !before };
  };
  // Awaited together: a failed count is this call's error, never a rejection nobody awaits (which ends the process).
  const [found, counted] = await Promise.all([page(), total]);
  return { ...found, total: counted };
}

/** `?` or `(?, ?)`: a row value, which both databases compare column by column. */
function tuple(size: number, placeholder: string): string {
  return size === 1 ? placeholder : `(${Array.from({ length: size }, () => placeholder).join(', ')})`;
}

/** How many rows `query` matches, reading at most `cap + 1` of them. */
export async function countUpTo(db: Knex, query: Knex.QueryBuilder, cap: number): Promise<{ count: number; more: boolean }> {
  const matched = query
    .clone()
    .clearSelect()
    .clearOrder()
    .select(db.raw('1 as one'))
    .limit(cap + 1);
  const row = (await db.from(matched.as('matched')).count({ n: '*' }).first()) as { n: number | string } | undefined;
  const n = Number(row?.n ?? 0);
  return n > cap ? { count: cap, more: true } : { count: n, more: false };
}
