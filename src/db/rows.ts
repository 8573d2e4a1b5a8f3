import type { Knex } from 'knex';
import type { Db } from './knex.js';
import { dialectOf } from './dialect.js';

/**
 * Rows per INSERT at most. Knex writes a multi-row INSERT for SQLite as one SELECT per row
 * joined by UNION ALL, and SQLite takes at most 500 of those in a statement; 500 rows of any
 * table here also stay well under either database's limit of bound parameters.
 */
const ROWS_PER_INSERT = 500;

/** Rows a statement may take in any number where statements are kept prepared: a few texts. */
const FEW_ROWS = 4;

/**
 * `items` cut into the pieces one statement each takes: at most `most`, and where the
 * connection keeps statements prepared (SQLite), a power of two each beyond a few (45: 32,
 * 8, 4 and 1), so that a statement written for many rows stays a few prepared texts, not one
 * for every size of batch.
 */
export function* piecesOf<T>(db: Db, items: readonly T[], most = ROWS_PER_INSERT): Generator<readonly T[]> {
  const fewTexts = dialectOf(db).keepsStatementsPrepared;
  for (let i = 0; i < items.length; ) {
    const left = Math.min(most, items.length - i);
    const n = fewTexts && left > FEW_ROWS ? 2 ** Math.floor(Math.log2(left)) : left;
    yield items.slice(i, i + n);
    i += n;
  }
}

/** Inserts `rows` into `table` in as few statements as both databases take (`piecesOf`), in the caller's transaction. */
export async function insertRows(db: Db, table: string, rows: readonly object[]): Promise<void> {
  for (const piece of piecesOf(db, rows)) await db(table).insert(piece);
}

/** `insertRows`, answering with the `columns` of each row inserted (in no set order). */
export async function insertRowsReturning<T>(db: Db, table: string, rows: readonly object[], columns: readonly string[]): Promise<T[]> {
  const inserted: T[] = [];
  for (const piece of piecesOf(db, rows))
    inserted.push(
      ...((await db(table)
        .insert(piece)
        .returning(columns as string[])) as T[]),
    );
  return inserted;
}

/**
 * One UPDATE of many rows of `table`, each with its own values: `rows` (each `[id, ...]`, in
 * the order of `names`, whose first is `id`) joined to the table by id, read in `set` and
 * `where` as `v.<name>`. A CASE of every id in each column (`caseById`) has each row read
 * through the others' values, and costs Knex as much again to build. The values are
 * parameters, which PostgreSQL reads as text here: compare them with a column of another type
 * through a cast (the ids through the dialect's `sameId`). The rows written, with the
 * `returning` columns.
 */
export async function updateFromValues<T>(
  db: Db,
  table: string,
  { names, rows, set, where, returning }: { names: readonly string[]; rows: ReadonlyArray<readonly Knex.Value[]>; set: string; where: string; returning: readonly string[] },
): Promise<T[]> {
  if (rows.length === 0) return [];
  if (names[0] !== 'id') throw new Error('updateFromValues: the first value of a row is its id');
  const row = `(${names.map(() => '?').join(', ')})`;
  const values = `select ${names.map((name, i) => `column${i + 1} as ${name}`).join(', ')} from (values ${rows.map(() => row).join(', ')}) as listed`;
  // The ids also as a list, so the rows are found through the primary key.
  const answer = await db.raw(
    `update ?? set ${set} from (${values}) as v
      where ${table}.id in (${rows.map(() => '?').join(', ')}) and ${dialectOf(db).sameId(`${table}.id`, 'v.id')} and ${where}
      returning ${returning.map((column) => `${table}.${column}`).join(', ')}`,
    [table, ...rows.flat(), ...rows.map((values) => values[0]!)],
  );
  return dialectOf(db).rawRows(answer) as T[];
}

/**
 * `case id when ? then cast(? as type) … end`: each row's own value, for one UPDATE of many
 * rows (`otherwise`, a column: what a row not in `ids` keeps). The value is typed in the
 * statement, as PostgreSQL reads a bare parameter in a CASE as text.
 */
export function caseById(db: Db, ids: readonly string[], type: string, valueFor: (id: string) => Knex.Value, otherwise?: string): Knex.Raw {
  if (ids.length === 0) return db.raw(otherwise ?? 'null');
  return db.raw(
    `case id ${ids.map(() => `when ? then cast(? as ${type})`).join(' ')}${otherwise ? ` else ${otherwise}` : ''} end`,
    ids.flatMap((id) => [id, valueFor(id)]),
  );
}
