import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import BetterSqlite3 from 'better-sqlite3';
import { FILE_PROBLEMS } from '../lib/file-problems.js';
import { BACKUP_FILE_MODE, DATA_FOLDER_MODE } from '../lib/paths.js';

/**
 * Every way SQLite and PostgreSQL differ for this application, in one place. Code that
 * needs one of these asks `dialectOf(db)`; all other SQL is written once, in the subset
 * both databases read the same way (row values, `||`, partial indexes, ON CONFLICT,
 * RETURNING). The text index, the other difference, is entries/search/text-index.ts.
 */
export interface Dialect {
  readonly kind: DatabaseKind;
  /** True when the error is the database refusing a duplicate key (a UNIQUE index or the primary key). */
  isUniqueViolation(err: unknown): boolean;
  /** True when the error is the database stopping a statement at its deadline (see `withStatementDeadline`). */
  isDeadlinePassed(err: unknown): boolean;
  /**
   * Narrows `query` to rows whose `column` holds `text`, in any case: LIKE on SQLite (which
   * folds ASCII letters only), ILIKE on PostgreSQL (which folds all). `%` and `_` in `text`
   * match themselves.
   */
  whereContains(query: Knex.QueryBuilder, column: string, text: string): void;
  /** The operator for "text matches this regular expression" (SQLite's is backed by JavaScript's RegExp, see knex.ts). */
  readonly regexpOperator: string;
  /** The rows of a `db.raw` statement that returns some: PostgreSQL's answer holds them, better-sqlite3's is them. */
  rawRows(answer: unknown): unknown[];
  /**
   * Makes `query` stop by `deadline` (epoch ms). SQLite cannot be interrupted from outside,
   * so its statements check `within_deadline(?)` themselves (`whereWithinDeadline`);
   * PostgreSQL's is cancelled when the deadline passes.
   */
  withDeadline(query: Knex.QueryBuilder, deadline: number): Knex.QueryBuilder;
  /** Adds the per-row deadline check to a statement that may read many rows (SQLite only). */
  whereWithinDeadline(query: Knex.QueryBuilder, deadline: number): void;
  /**
   * `table`, for a query that must read it through `index`. SQLite's planner cannot tell two
   * indexes on the same columns apart without statistics, and a work queue's partial index
   * (its due rows only) ties with the full one that also holds every finished row, so it is
   * told (`INDEXED BY`, an error should the index not serve the query). PostgreSQL sizes
   * partial indexes from its statistics and takes no hints.
   */
  fromIndex(db: Knex, table: string, index: string): Knex.QueryBuilder;
  /**
   * SQL for "the uuid column `column` equals `listed`", an id given as a parameter (text) in a
   * VALUES list, in a form the column's index serves. SQLite compares text as it is: a cast
   * of the column hid its index, and from 64 listed rows the planner built a temporary index
   * of every row of the same status at each statement instead. PostgreSQL's uuid is compared
   * as text (a parameter there is text), its rows found by a list of the ids beside it.
   */
  sameId(column: string, listed: string): string;
  /**
   * Writes `set` on the rows `candidates` (SELECTs of ids, taken together) pick, so that no
   * two claimers, in any process, write the same row; `due` guards the write where the
   * database needs it. Returns the rows as written, each with what `alongside` adds (db/claims.ts).
   */
  claimRows(
    db: Knex,
    table: string,
    candidates: readonly Knex.QueryBuilder[],
    due: (query: Knex.QueryBuilder) => void,
    set: Record<string, unknown>,
    alongside?: readonly Knex.Raw[],
  ): Promise<unknown[]>;
  /**
   * Locks the rows of `table` among `ids` that `where` keeps, in order of id, until `trx`
   * ends; the ids locked. A statement of its own, so the write that follows reads the rows
   * as locked and sees all committed before (one statement that both locked and wrote
   * would wait twice for a row changed meanwhile, which can deadlock). `skipLocked`: pass
   * over rows another transaction holds rather than wait. `exclusive`: also conflict with
   * inserts of rows that refer to these (their foreign key check holds them), keeping new
   * ones out until `trx` ends. SQLite writes one transaction at a time: all of `ids`,
   * unread (a read first would let another process write between it and the transaction's
   * first write); `where` is then for the caller's write to check.
   */
  holdRows(
    trx: Knex,
    table: string,
    ids: readonly string[],
    options?: { exclusive?: boolean; skipLocked?: boolean; where?: (query: Knex.QueryBuilder) => void },
  ): Promise<string[]>;
  /**
   * Makes `trx` a writer from its first statement, for a transaction that reads before it
   * writes. On SQLite such a transaction fails, unwaited, when another process wrote between
   * its read and its first write; a write that changes nothing (to `table`'s `column`, not a key) takes the
   * database's one write lock first, waiting its turn. PostgreSQL locks the rows it reads
   * where it must (`holdRows`), so nothing is done there.
   */
  writeFirst(trx: Knex, table: string, column: string): Promise<void>;
  /**
   * Whether concurrent small writes share one transaction (db/group-commit.ts): on SQLite,
   * where commits are one at a time and cost more than the rows in them; not on PostgreSQL,
   * where they commit in parallel and a shared transaction holding many rows' locks could
   * deadlock with another process's.
   */
  readonly sharesCommits: boolean;
  /**
   * Whether the connection keeps the statements it has run prepared (SQLite's, db/knex.ts),
   * so that statements of few distinct texts cost less (db/rows.ts writes multi-row INSERTs
   * of a few sizes there); PostgreSQL's queries are parsed anew each time.
   */
  readonly keepsStatementsPrepared: boolean;
  /**
   * Connections kept for the work engine's claims and the dispatcher (db/knex.ts,
   * `claimConnections`), beside the pool the rest shares: 0 on SQLite, where one connection
   * serves the process and every claim takes the one write lock anyway; on PostgreSQL a claim
   * in the shared pool waits in line behind the writes of every run in flight.
   */
  readonly claimConnections: number;
  /** Runs `fn` while no other process runs migrations on this database. */
  withMigrationLock<T>(db: Knex, fn: () => Promise<T>): Promise<T>;
  /** Keeps the query planner's statistics current as data grows. Run daily, once per database. */
  optimize(db: Knex): Promise<void>;
  /** What a process that does background work runs at start, before serving. */
  optimizeAtStart(db: Knex): Promise<void>;
  /**
   * Clears what a queue's drain left in `tables` (the work engine calls it once the queue is
   * idle after one), so that the next claims read live rows only. On PostgreSQL each row a
   * claim or a finish changed leaves a dead version, and an entry in the queue's partial
   * index that every later claim walks past, until VACUUM; autovacuum looks at most once a
   * minute. `skip_locked`: a vacuum under way (another process's, autovacuum's) does the
   * same. SQLite removes a row's old index entries as it writes them: nothing is left.
   */
  tidyAfterDrain(db: Knex, tables: readonly string[]): Promise<void>;
  /** After rows were inserted with their ids: the next generated `id` of `table` comes after them. */
  moveSequencePastRows(db: Knex, table: string): Promise<void>;
  /** A consistent copy of the database, taken while it serves, written to `file`. */
  backup(db: Knex, file: string): Promise<{ file: string; bytes: number }>;
}

export type DatabaseKind = 'sqlite' | 'postgres';

/** `postgres://` and `postgresql://` URLs name a PostgreSQL database; anything else is a SQLite file. */
export function databaseKindOf(location: string): DatabaseKind {
  return /^postgres(ql)?:\/\//i.test(location) ? 'postgres' : 'sqlite';
}

export class BackupNotSupportedError extends Error {
  override name = 'BackupNotSupportedError';
}

/** A backup that could not be written where it was asked for, said in one line. */
export class BackupFailedError extends Error {
  override name = 'BackupFailedError';
}

// What the file system or SQLite says, in words an operator can act on.
const BACKUP_REASONS: Record<string, string> = {
  ...FILE_PROBLEMS,
  SQLITE_CANTOPEN: 'the file cannot be created there',
  SQLITE_FULL: FILE_PROBLEMS.ENOSPC!,
};

function backupFailed(target: string, err: unknown): Error {
  const code = (err as { code?: unknown } | null)?.code;
  const reason = typeof code === 'string' ? BACKUP_REASONS[code] : undefined;
  return reason ? new BackupFailedError(`Cannot write the backup to ${target}: ${reason}.`) : (err as Error);
}

/** How long a process waits for another one's migrations before giving up. */
const MIGRATION_LOCK_WAIT_MS = 60_000;

const sqlite: Dialect = {
  kind: 'sqlite',
  isUniqueViolation(err) {
    const code = (err as { code?: string } | null)?.code;
    return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
  },
  isDeadlinePassed(err) {
    return (err as Error | null)?.name === 'DeadlinePassedError';
  },
  regexpOperator: 'regexp',
  rawRows: (answer) => answer as unknown[],
  whereContains(query, column, text) {
    query.whereRaw(`?? like ? escape '\\'`, [column, containsPattern(text)]);
  },
  withDeadline(query) {
    return query;
  },
  whereWithinDeadline(query, deadline) {
    query.whereRaw('within_deadline(?)', [deadline]);
  },
  fromIndex(db, table, index) {
    return db.from(db.raw('?? indexed by ??', [table, index]));
  },
  sameId: (column, listed) => `${column} = ${listed}`,
  /** One writer at a time: a guarded UPDATE cannot meet another claim. */
  claimRows(db, table, candidates, due, set, alongside = []) {
    const claim = db(table).whereIn('id', unionAll(db, candidates));
    due(claim);
    return claim.update(set).returning(['*', ...alongside]);
  },
  async holdRows(_trx, _table, ids) {
    return [...ids];
  },
  async writeFirst(trx, table, column) {
    await trx.raw('update ?? set ?? = ?? where 0', [table, column, column]);
  },
  sharesCommits: true,
  keepsStatementsPrepared: true,
  claimConnections: 0,
  /**
   * An exclusive SQLite lock on a sidecar file next to the database. The operating system
   * releases it when its process dies, so a crash never leaves it behind. Under it, the
   * process's connection keeps its temporary files on disk: a migration may rewrite a whole
   * table in one statement, whose statement journal would otherwise hold that table's pages
   * in memory (knex.ts, `applyPragmas`).
   */
  async withMigrationLock(db, fn) {
    const filename = (db.client.config.connection as { filename: string }).filename;
    if (filename === ':memory:') return fn();
    const lock = new BetterSqlite3(`${filename}.migrate-lock`);
    try {
      lock.pragma(`busy_timeout = ${MIGRATION_LOCK_WAIT_MS}`);
      lock.exec('BEGIN EXCLUSIVE');
      await db.raw('pragma temp_store = default');
      return await fn();
    } finally {
      if (lock.inTransaction) lock.exec('COMMIT');
      lock.close();
      await db.raw('pragma temp_store = memory');
    }
  },
  /** `PRAGMA optimize` analyzes only the tables that need it, with a bounded effort. */
  async optimize(db) {
    await db.raw('pragma optimize');
  },
  /** Cheap, so every process starts from current statistics (SQLite keeps none up to date by itself). */
  optimizeAtStart(db) {
    return this.optimize(db);
  },
  async tidyAfterDrain() {},
  /** Nothing: AUTOINCREMENT already continues after the largest id inserted. */
  async moveSequencePastRows() {},
  /**
   * SQLite's online backup API (better-sqlite3's `backup()`), which copies page by page and
   * restarts around concurrent writes. Writes `<file>.partial` and renames at the end, so a
   * file at `file` is always a whole backup.
   */
  async backup(db, file) {
    const target = path.resolve(file);
    const partial = `${target}.partial`;
    try {
      // Said before the copy, not after it, and no copy left beside the folder.
      if (fs.statSync(target, { throwIfNoEntry: false })?.isDirectory()) throw Object.assign(new Error(target), { code: 'EISDIR' });
      fs.mkdirSync(path.dirname(target), { recursive: true, mode: DATA_FOLDER_MODE });
      fs.rmSync(partial, { force: true });
      const connection = (await db.client.acquireConnection()) as BetterSqlite3.Database;
      try {
        await connection.backup(partial);
      } finally {
        await db.client.releaseConnection(connection);
      }
      fs.chmodSync(partial, BACKUP_FILE_MODE);
      fs.renameSync(partial, target);
    } catch (err) {
      try {
        fs.rmSync(partial, { force: true });
      } catch {
        // Nothing could be written there either.
      }
      throw backupFailed(target, err);
    }
    return { file: target, bytes: fs.statSync(target).size };
  },
};

/** An arbitrary, fixed key for the migrations' advisory lock ("scribe" in ASCII). */
const MIGRATION_LOCK_KEY = 0x736372696265;
/** The key of the advisory lock one starting process holds while it analyzes new tables. */
export const ANALYZE_LOCK_KEY = MIGRATION_LOCK_KEY + 1;

interface PgConnection {
  query(sql: string, values?: unknown[]): Promise<unknown>;
}

const postgres: Dialect = {
  kind: 'postgres',
  isUniqueViolation(err) {
    return (err as { code?: string } | null)?.code === '23505';
  },
  isDeadlinePassed(err) {
    // Knex's timeout, which cancels the statement; query_canceled, what the statement then ends with.
    return (err as Error | null)?.name === 'KnexTimeoutError' || (err as { code?: string } | null)?.code === '57014';
  },
  regexpOperator: '~',
  rawRows: (answer) => (answer as { rows: unknown[] }).rows,
  whereContains(query, column, text) {
    query.whereRaw(`?? ilike ? escape '\\'`, [column, containsPattern(text)]);
  },
  /**
   * Knex's query timeout, which sends the server a cancel (from a connection of its own, so
   * a full pool cannot hold it up) when the deadline passes. A search then costs one round
   * trip; a transaction-local `statement_timeout` costs three more.
   */
  withDeadline(query, deadline) {
    return query.timeout(Math.max(1, Math.ceil(deadline - Date.now())), { cancel: true });
  },
  whereWithinDeadline() {},
  fromIndex(db, table) {
    return db(table);
  },
  sameId: (column, listed) => `cast(${column} as varchar(36)) = ${listed}`,
  /**
   * The candidates are locked (passing over rows other claimers hold) until the claim is
   * written. NO KEY UPDATE, the lock the claim's own UPDATE takes: unlike FOR UPDATE it does
   * not conflict with the key-share locks that inserting a row's events or messages takes
   * on it (foreign keys), so a claim never passes over a row only because of those.
   */
  claimRows(db, table, candidates, _due, set, alongside = []) {
    return db
      .with(
        'claimed',
        unionAll(
          db,
          candidates.map((c) => c.forNoKeyUpdate().skipLocked()),
        ),
      )
      .table(table)
      .updateFrom('claimed')
      .whereRaw('?? = claimed.id', [`${table}.id`])
      .update(set)
      .returning([`${table}.*`, ...alongside]);
  },
  /**
   * FOR NO KEY UPDATE, the lock an UPDATE that leaves the key alone takes anyway (see
   * claimRows); FOR UPDATE when `exclusive`, which also conflicts with the key-share lock
   * that inserting a row which refers to the held one takes (its foreign key check) until
   * that insert commits.
   */
  async holdRows(trx, table, ids, { exclusive = false, skipLocked = false, where } = {}) {
    if (ids.length === 0) return [];
    const query = trx(table).whereIn('id', ids).orderBy('id').select('id');
    where?.(query);
    const locked = exclusive ? query.forUpdate() : query.forNoKeyUpdate();
    const rows: Array<{ id: string }> = await (skipLocked ? locked.skipLocked() : locked);
    return rows.map((row) => row.id);
  },
  async writeFirst() {},
  sharesCommits: false,
  keepsStatementsPrepared: false,
  claimConnections: 4,
  /**
   * A session advisory lock on a connection of its own: the server releases it when that
   * connection closes, so a crashed migrator never leaves it behind.
   */
  async withMigrationLock(db, fn) {
    const connection = (await db.client.acquireConnection()) as PgConnection;
    try {
      await connection.query(`set lock_timeout = ${MIGRATION_LOCK_WAIT_MS}`);
      await connection.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
      await connection.query('reset lock_timeout');
      try {
        return await fn();
      } finally {
        await connection.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
      }
    } finally {
      await db.client.releaseConnection(connection);
    }
  },
  /** Autovacuum keeps statistics too; a daily ANALYZE (sampled, bounded) catches fast-growing tables early. */
  async optimize(db) {
    await db.raw('analyze');
  },
  /**
   * Tables never analyzed yet (a new install): without statistics the planner guesses, and
   * until autovacuum's first pass it may sort a scribe's whole backlog for a page of 25.
   * Autovacuum keeps the others current. One starting process does it; the others, finding
   * the lock taken, start at once.
   */
  async optimizeAtStart(db) {
    await db.transaction(async (trx) => {
      const { rows } = await trx.raw('select pg_try_advisory_xact_lock(?) as locked', [ANALYZE_LOCK_KEY]);
      if (!rows[0].locked) return;
      const never = await trx.raw(
        `select quote_ident(schemaname) || '.' || quote_ident(relname) as name from pg_stat_user_tables where last_analyze is null and last_autoanalyze is null`,
      );
      for (const table of never.rows as Array<{ name: string }>) await trx.raw(`analyze ${table.name}`);
    });
  },
  async tidyAfterDrain(db, tables) {
    // VACUUM takes no parameters (and runs outside a transaction): the names are the code's own, quoted by Knex.
    await db.raw(`vacuum (skip_locked) ${tables.map(() => '??').join(', ')}`, tables);
  },
  async moveSequencePastRows(db, table) {
    await db.raw(`select setval(pg_get_serial_sequence(?, 'id'), coalesce((select max(id) from ??), 0) + 1, false)`, [table, table]);
  },
  async backup() {
    throw new BackupNotSupportedError('On PostgreSQL, back up with pg_dump (docs/deploy.md, "Backups"): pg_dump --format=custom --file=scribe.dump "$DATABASE_URL"');
  },
};

/** The ids the SELECTs `queries` pick, taken together (each may have its own order and limit). */
function unionAll(db: Knex, queries: readonly Knex.QueryBuilder[]): Knex.QueryBuilder {
  if (queries.length === 1) return queries[0]!;
  const [first, ...rest] = queries.map((query, i) => db.select('id').from(query.as(`candidates_${i}`)));
  return first!.unionAll(rest);
}

/** A LIKE pattern matching `text` anywhere, its `%`, `_` and `\` taken literally. */
function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** The dialect of a Knex instance or transaction. */
export function dialectOf(db: Knex): Dialect {
  return db.client.config.client === 'pg' ? postgres : sqlite;
}
