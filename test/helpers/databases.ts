import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import pg from 'pg';
import { openDatabase, type Db } from '../../src/db/knex.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { databaseKindOf, type DatabaseKind } from '../../src/db/dialect.js';

/**
 * Which database this run of the suite uses: `TEST_DATABASE=postgres` (with the throwaway
 * cluster of global-fixtures.ts) or SQLite, the default. `npm test` runs the suite once
 * with each (test/run-suites.ts).
 */
export const testDatabaseKind: DatabaseKind = process.env.TEST_DATABASE === 'postgres' ? 'postgres' : 'sqlite';

/**
 * Registers a suite (`onlyOn`) or a test (`itOnlyOn`) only on `kind`: tests of one database's
 * own features (SQLite's backup, pg's advisory lock). On the other database they do not exist
 * rather than showing as pending, so a pending test in the output is always a real gap.
 */
export const onlyOn = (kind: DatabaseKind) => (testDatabaseKind === kind ? describe : (..._: Parameters<typeof describe>) => undefined);
export const itOnlyOn = (kind: DatabaseKind) => (testDatabaseKind === kind ? it : (..._: Parameters<typeof it>) => undefined);

let admin: pg.Pool | undefined;
let template: Promise<string> | undefined;
let sqliteTemplate: Promise<string> | undefined;
let created = 0;

function serverUrl(): string {
  const url = process.env.TEST_POSTGRES_URL;
  if (!url) throw new Error('TEST_DATABASE=postgres needs TEST_POSTGRES_URL (set by test/helpers/global-fixtures.ts)');
  return url;
}

function urlOf(database: string): string {
  const url = new URL(serverUrl());
  url.pathname = `/${database}`;
  return url.toString();
}

async function adminQuery(sql: string): Promise<void> {
  if (!admin) {
    // Idle connections close by themselves, and one cut when the cluster stops is no error.
    admin = new pg.Pool({ connectionString: serverUrl(), max: 2, idleTimeoutMillis: 1000, allowExitOnIdle: true });
    admin.on('error', () => {});
  }
  await admin.query(sql);
}

async function migrateAndClose(location: string): Promise<void> {
  const db = openDatabase(location);
  try {
    await migrateToLatest(db);
  } finally {
    await db.destroy();
  }
}

/** A migrated database to clone: migrating once per run and copying it is much faster than migrating each time. */
function migratedSqliteTemplate(): Promise<string> {
  sqliteTemplate ??= (async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribe-template-'));
    process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'scribe.sqlite');
    // Closing the last connection checkpoints the WAL into the file, so the file alone is the database.
    await migrateAndClose(file);
    return file;
  })();
  return sqliteTemplate;
}

function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    const name = `scribe_template_${process.pid}`;
    await adminQuery(`drop database if exists ${name}`);
    await adminQuery(`create database ${name}`);
    await migrateAndClose(urlOf(name));
    return name;
  })();
  return template;
}

/**
 * Where a test's database lives: a SQLite file in `dir`, or a new PostgreSQL database on the
 * test cluster, migrated unless `migrated` is false. Drop it with `dropTestDatabase`.
 */
export async function createTestDatabase(dir: string, { migrated = true, kind = testDatabaseKind }: { migrated?: boolean; kind?: DatabaseKind } = {}): Promise<string> {
  if (kind === 'sqlite') {
    const file = path.join(dir, 'scribe.sqlite');
    if (migrated) fs.copyFileSync(await migratedSqliteTemplate(), file);
    return file;
  }
  const name = `scribe_test_${process.pid}_${++created}`;
  await adminQuery(migrated ? `create database ${name} template ${await migratedTemplate()}` : `create database ${name}`);
  return urlOf(name);
}

/** Removes a database `createTestDatabase` made (a SQLite file goes with its folder). */
export async function dropTestDatabase(url: string): Promise<void> {
  if (databaseKindOf(url) === 'sqlite') return;
  await adminQuery(`drop database if exists ${new URL(url).pathname.slice(1)} with (force)`);
}

/**
 * Makes inserts into `table` fail with `message` when `column` equals `value` (a database
 * fault the application did not cause); returns the undo.
 */
export async function failInsertsWhen(db: Db, { table, column, value, message }: { table: string; column: string; value: string; message: string }): Promise<() => Promise<void>> {
  const name = `fail_${table}_${column}`;
  if (testDatabaseKind === 'sqlite') {
    await db.raw(`create trigger ${name} before insert on ${table} when new.${column} = '${value}' begin select raise(abort, '${message}'); end`);
    return async () => void (await db.raw(`drop trigger if exists ${name}`));
  }
  await db.raw(`create or replace function ${name}() returns trigger language plpgsql as $$ begin raise exception '${message}'; end $$`);
  await db.raw(`create trigger ${name} before insert on ${table} for each row when (new.${column} = '${value}') execute function ${name}()`);
  return async () => {
    await db.raw(`drop trigger if exists ${name} on ${table}`);
    await db.raw(`drop function if exists ${name}()`);
  };
}

/** A boolean column's value as this database returns it (SQLite has no boolean type: 1 and 0). */
export function stored(value: boolean): boolean | number {
  return testDatabaseKind === 'sqlite' ? Number(value) : value;
}

/** Makes the database refuse writes as a full disk or a read-only replica would; returns the undo. */
export async function refuseWrites(db: Db): Promise<() => Promise<void>> {
  if (testDatabaseKind === 'sqlite') {
    // One connection serves the process, so the pragma holds for every query.
    await db.raw('pragma query_only = 1');
    return async () => void (await db.raw('pragma query_only = 0'));
  }
  // A statement trigger fires even for an update that touches no row (as readiness's probe does).
  await db.raw(
    `create or replace function refuse_writes() returns trigger language plpgsql as $$ begin raise exception 'cannot execute UPDATE in a read-only transaction'; end $$`,
  );
  await db.raw('create trigger refuse_writes before insert or update or delete on organizations for each statement execute function refuse_writes()');
  return async () => {
    await db.raw('drop trigger if exists refuse_writes on organizations');
    await db.raw('drop function if exists refuse_writes()');
  };
}

/** A data folder and a database, as an operator sets them up for the server and the CLI. */
export interface TestInstall {
  dir: string;
  databaseUrl: string;
  /** DATA_DIR and DATABASE_URL, for processes started on this install. */
  env: { DATA_DIR: string; DATABASE_URL: string };
  /** A connection of the test's own to the install's database. */
  open(): Db;
  /** Drops the database (PostgreSQL; a SQLite file goes with its folder). */
  drop(): Promise<void>;
}

/** A fresh data folder with an empty database (the server or CLI migrates it), or a migrated one. */
export async function createTestInstall(dir: string, { migrated = false, kind = testDatabaseKind }: { migrated?: boolean; kind?: DatabaseKind } = {}): Promise<TestInstall> {
  const databaseUrl = await createTestDatabase(dir, { migrated, kind });
  const install: TestInstall = {
    dir,
    databaseUrl,
    env: { DATA_DIR: dir, DATABASE_URL: databaseUrl },
    open: () => openDatabase(databaseUrl),
    drop: () => dropTestDatabase(databaseUrl),
  };
  installs.set(dir, install);
  return install;
}

const installs = new Map<string, TestInstall>();

/** The install of a data folder (made, with an empty database, on first use). */
export async function installOf(dir: string): Promise<TestInstall> {
  return installs.get(dir) ?? createTestInstall(dir);
}

/** DATA_DIR and DATABASE_URL of a data folder's install, for a process started on it. */
export async function installEnv(dir: string): Promise<TestInstall['env']> {
  return (await installOf(dir)).env;
}

/** A connection to a data folder's database. */
export async function openInstall(dir: string): Promise<Db> {
  return (await installOf(dir)).open();
}

/** The application's tables (not the migrator's or the database's own), by name. */
export async function tableNames(db: Db): Promise<string[]> {
  const rows: Array<{ name: string }> =
    testDatabaseKind === 'sqlite'
      ? await db.raw("select name from sqlite_master where type = 'table' and name not like 'knex_%' and name not like 'sqlite_%' order by name")
      : (await db.raw("select table_name as name from information_schema.tables where table_schema = current_schema() and table_name not like 'knex_%' order by table_name")).rows;
  return rows.map((r) => r.name);
}

/** Transactions PostgreSQL has ended as deadlocks in `db`'s database so far (`pg_stat_database`). */
export async function deadlocksOf(db: Db): Promise<number> {
  const { rows } = await db.raw('select deadlocks from pg_stat_database where datname = current_database()');
  return Number(rows[0].deadlocks);
}

/** A statement the database ran, as Knex reported it. */
export interface RanStatement {
  sql: string;
  bindings: Knex.RawBinding[];
}

/** What `run` resolves to, and the statements `db` ran meanwhile, in order. */
export async function statementsDuring<T>(db: Db, run: () => Promise<T>): Promise<{ value: T; statements: RanStatement[] }> {
  const statements: RanStatement[] = [];
  const listen = (query: { sql: string; bindings?: Knex.RawBinding[] }) => statements.push({ sql: query.sql, bindings: query.bindings ?? [] });
  db.on('query', listen);
  try {
    return { value: await run(), statements };
  } finally {
    db.off('query', listen);
  }
}
