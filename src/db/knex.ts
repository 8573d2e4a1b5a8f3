import fs from 'node:fs';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import type BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { databaseKindOf, dialectOf } from './dialect.js';
import { DATA_FOLDER_MODE } from '../lib/paths.js';

export type Db = Knex;

/**
 * The SQLite-specific connection settings, in one place. Each pragma is set on every new
 * connection because SQLite keeps them per connection.
 */
function applyPragmas(conn: BetterSqlite3.Database): void {
  // Wait for a competing writer (the admin CLI, another process) instead of failing at once.
  conn.pragma('busy_timeout = 5000');
  // A read-only connection (a read worker's) finds the database in WAL mode already.
  if (conn.readonly) return;
  // Readers never block the writer and vice versa; one writer at a time.
  conn.pragma('journal_mode = WAL');
  // SQLite ignores foreign keys unless asked, per connection.
  conn.pragma('foreign_keys = ON');
  // Durable at every checkpoint and safe against corruption in WAL mode; fsync per commit is not needed.
  conn.pragma('synchronous = NORMAL');
  // Temporary files in memory: the statement journal a statement keeps while it changes many
  // pages inside a transaction (a batch's multi-row UPDATE) was a new file in /var/tmp, written
  // and unlinked, several times a second. It holds the old content of the pages the statement
  // changes while the statement runs: migrations, which may rewrite whole tables, keep theirs
  // on disk (dialect.ts, `withMigrationLock`).
  conn.pragma('temp_store = MEMORY');
}

/** Patterns kept compiled per connection for `regexp`; queries make few distinct ones. */
const REGEXP_CACHE_SIZE = 100;

/**
 * SQLite parses `x REGEXP p` but leaves the function behind it to the application: this is
 * JavaScript's RegExp (PostgreSQL's counterpart is `x ~ p`), compiled once per pattern. It
 * lets one check per row test many alternatives (entries/search/text-match.ts).
 */
function defineRegexp(conn: BetterSqlite3.Database): void {
  const compiled = new Map<string, RegExp>();
  conn.function('regexp', { deterministic: true }, (pattern: unknown, text: unknown) => {
    if (typeof pattern !== 'string' || typeof text !== 'string') return null;
    let re = compiled.get(pattern);
    if (!re) {
      if (compiled.size >= REGEXP_CACHE_SIZE) compiled.clear();
      re = new RegExp(pattern);
      compiled.set(pattern, re);
    }
    return re.test(text) ? 1 : 0;
  });
}

/** The error `within_deadline` fails a statement with. */
export class DeadlinePassedError extends Error {
  constructor() {
    super('statement deadline passed');
    this.name = 'DeadlinePassedError';
  }
}

/** Calls of `within_deadline` between two looks at the clock (each call costs far less than a look). */
const DEADLINE_CHECK_EVERY = 256;

/**
 * `within_deadline(ms)` in a query's WHERE is true until the clock passes `ms` (epoch
 * milliseconds), and then fails the statement: SQLite cannot be stopped from outside
 * (better-sqlite3 offers no interrupt), so a statement that may read a whole table checks
 * its own deadline. Being JavaScript, it also lets a worker thread that is being terminated
 * stop in the middle of such a statement rather than at its end. Never folded to a constant:
 * SQLite calls a non-deterministic function on every row. (PostgreSQL cancels instead: dialect.ts, withDeadline.)
 */
function defineDeadline(conn: BetterSqlite3.Database): void {
  let calls = 0;
  conn.function('within_deadline', { deterministic: false }, (deadline: unknown) => {
    if (++calls % DEADLINE_CHECK_EVERY === 0 && Date.now() > Number(deadline)) throw new DeadlinePassedError();
    return 1;
  });
}

/** Distinct SQL texts kept prepared per connection; Knex emits a small, fixed set. */
const STATEMENT_CACHE_SIZE = 500;
/** Statements used once: Knex names each savepoint anew (`trxN`). */
const ONE_OFF = /^(SAVEPOINT|RELEASE SAVEPOINT|ROLLBACK TO SAVEPOINT) trx\d+/i;

/** Knex's bound LIMIT, as it writes it. */
const BOUND_LIMIT = /\blimit \?/gi;

/**
 * The text SQLite is given for `sql`: a bound LIMIT as an expression (`limit (? + 0)`).
 * SQLite plans `limit ?` from the value bound to it, and so marks the statement to be
 * planned again whenever that parameter is bound anew, which a kept statement is at every
 * run: each claim, each `first()`. An expression's value is read as the statement runs.
 */
export function keptStatementText(sql: string): string {
  return sql.replace(BOUND_LIMIT, 'limit (? + 0)');
}

/**
 * Knex's better-sqlite3 dialect prepares every statement anew, which costs more than
 * running it. Statements are reusable (Knex runs each to completion synchronously and
 * SQLite re-prepares by itself after schema changes), so keep the recent ones, written so
 * that SQLite plans each once (`keptStatementText`).
 */
function cacheStatements(conn: BetterSqlite3.Database): void {
  const prepare = conn.prepare.bind(conn);
  const cache = new Map<string, BetterSqlite3.Statement>();
  conn.prepare = ((sql: string) => {
    // Kept, they would push the reusable statements out.
    if (ONE_OFF.test(sql)) return prepare(sql);
    let statement = cache.get(sql);
    if (!statement) {
      statement = prepare(keptStatementText(sql));
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      cache.set(sql, statement);
    }
    return statement;
  }) as typeof conn.prepare;
}

export interface OpenOptions {
  /** A connection that only reads (a read worker's, see entries/read-workers.ts). SQLite only. */
  readonly?: boolean;
  /** Most connections this process opens (PostgreSQL; SQLite always uses one). */
  poolSize?: number;
}

/**
 * Opens the database `location` names: a `postgres://` URL, or a SQLite file (creating its
 * folder).
 */
export function openDatabase(location: string, options: OpenOptions = {}): Db {
  return databaseKindOf(location) === 'postgres' ? openPostgres(location, options) : openSqlite(location, options);
}

// Knex prints every failed connection attempt with its stack on the console; the same error
// reaches the query that asked for the connection, whose caller reports it.
const KNEX_LOG = { warn: (message: string) => void (message.startsWith('Acquire connection error') || console.warn(message)) };

/** A SQLite file with the pragmas and functions above on every connection. */
function openSqlite(filename: string, { readonly = false }: OpenOptions): Db {
  if (filename !== ':memory:' && !readonly) fs.mkdirSync(path.dirname(filename), { recursive: true, mode: DATA_FOLDER_MODE });
  return knexFactory({
    client: 'better-sqlite3',
    connection: { filename, options: { readonly } },
    useNullAsDefault: true,
    log: KNEX_LOG,
    pool: {
      // better-sqlite3 is synchronous: one connection serves the whole process.
      min: 1,
      max: 1,
      afterCreate(conn: BetterSqlite3.Database, done: (err: Error | null, conn: unknown) => void) {
        try {
          applyPragmas(conn);
          defineRegexp(conn);
          defineDeadline(conn);
          cacheStatements(conn);
          done(null, conn);
        } catch (err) {
          done(err as Error, conn);
        }
      },
    },
  });
}

// PostgreSQL sends 64-bit integers (count(*), bigint columns) and numerics as text, since
// they may not fit a JavaScript number; counts and sizes here always do.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number.parseInt(value, 10));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (value) => Number.parseFloat(value));

/**
 * Runs independent reads: at once on a pool (each takes a connection of its own), one after
 * another in a transaction, whose one connection would queue them anyway (and pg warns that
 * it will refuse queries sent while one runs).
 */
export async function readsOf<T extends readonly unknown[]>(db: Db, ...reads: { [K in keyof T]: () => Promise<T[K]> }): Promise<T> {
  if (!db.isTransaction) return (await Promise.all(reads.map((read) => read()))) as unknown as T;
  const results: unknown[] = [];
  for (const read of reads) results.push(await read());
  return results as unknown as T;
}

/** Resolves when the database takes writes: a write that changes nothing, refused by a read-only or full database. */
export async function probeWrite(db: Db): Promise<void> {
  await db.transaction((trx) => trx('organizations').whereRaw('1 = 0').update({ name: '' }));
}

/** Connections a process keeps to PostgreSQL when not told otherwise (docs/deploy.md, pool sizes). */
export const DEFAULT_POOL_SIZE = 10;

/**
 * The database as the work engine's claims and the dispatcher reach it: its own few
 * connections where the dialect keeps some (`claimConnections`), so that a new scribe's
 * receipt and claim do not wait behind the writes of a thousand runs; else `db` itself.
 * The caller destroys it when it is not `db`.
 */
export function claimConnections(db: Db): Db {
  const size = dialectOf(db).claimConnections;
  return size === 0 ? db : knexFactory({ ...db.client.config, pool: { min: 0, max: size } });
}

/** A PostgreSQL database through node-postgres; every session in UTC, so `now()` and timestamps never shift. */
function openPostgres(url: string, { poolSize = DEFAULT_POOL_SIZE }: OpenOptions): Db {
  return knexFactory({
    client: 'pg',
    connection: { connectionString: url, options: '-c timezone=UTC' },
    pool: { min: 0, max: poolSize },
    log: KNEX_LOG,
  });
}
