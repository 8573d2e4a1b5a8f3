import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Knex } from 'knex';
import { type Db, probeWrite } from './knex.js';
import { dialectOf } from './dialect.js';
import { explainOpenFailure } from './open-failure.js';
import type { SecretBox } from '../secrets/secret-box.js';
import { checkSecretsKey } from '../secrets/keys.js';
import { FROM_SOURCES, PROJECT_ROOT } from '../lib/paths.js';

/** The migrations folder: the sources under tsx, tsc's output of them in a build. */
const MIGRATIONS_DIR = path.join(PROJECT_ROOT, FROM_SOURCES ? 'migrations' : 'dist/migrations', path.sep);

interface MigrationModule {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/**
 * Lists migrations by name without extension, so a database migrated under tsx (`.ts`)
 * stays current when the compiled server (`.js`) starts, and the other way round.
 */
class FolderMigrationSource implements Knex.MigrationSource<string> {
  constructor(private readonly dir: string) {}

  async getMigrations(): Promise<string[]> {
    const files = fs.readdirSync(this.dir).filter((f) => /\.(ts|js)$/.test(f) && !f.endsWith('.d.ts'));
    return [...new Set(files.map((f) => f.replace(/\.(ts|js)$/, '')))].sort();
  }

  getMigrationName(name: string): string {
    return name;
  }

  async getMigration(name: string): Promise<MigrationModule> {
    const file = ['.js', '.ts'].map((ext) => `${this.dir}${name}${ext}`).find((f) => fs.existsSync(f));
    if (!file) throw new Error(`Migration file for ${name} not found in ${this.dir}`);
    return (await import(pathToFileURL(file).href)) as MigrationModule;
  }
}

export function migrationConfig(): Knex.MigratorConfig {
  return { migrationSource: new FolderMigrationSource(MIGRATIONS_DIR) };
}

/**
 * Applies pending migrations. Several processes may start at once on a fresh database
 * (the server and admin commands), and Knex's own bookkeeping is check-then-create, so
 * migrations run under a cross-process lock (a sidecar file's lock on SQLite, an advisory
 * lock on PostgreSQL: dialect.ts). With the install's secret box, migrations that seal
 * secrets can run, and the key is checked against the one the database's secrets are
 * sealed with, under the same lock, so two processes with different keys cannot both pass.
 */
export async function migrateToLatest(db: Db, { secrets }: { secrets?: SecretBox } = {}): Promise<void> {
  const config = migrationConfig();
  await dialectOf(db).withMigrationLock(db, async () => {
    const [, pending] = (await db.migrate.list(config)) as [unknown[], unknown[]];
    if (pending.length > 0) {
      // Holding our lock we are the only migrator, so a Knex lock left by a crash is stale.
      await db.migrate.forceFreeMigrationsLock(config);
      await (secrets ? db.withUserParams({ secrets }) : db).migrate.latest(config);
    }
    if (secrets) await checkSecretsKey(db, secrets, new Date().toISOString());
  });
}

/** Names of migrations not applied yet (readiness: a server behind its code is not ready). */
export async function pendingMigrations(db: Db): Promise<string[]> {
  const [, pending] = (await db.migrate.list(migrationConfig())) as [unknown[], Array<{ file: string } | string>];
  return pending.map((m) => (typeof m === 'string' ? m : m.file));
}

/**
 * `migrateToLatest` for an entry point, whose migration is the first thing to connect, then a
 * write that changes nothing: a database out of reach at `location`, or one it may read but
 * not write (a restored file the service's user does not own), comes out as a
 * DatabaseUnreachableError, which entry points say in one line.
 */
export async function migrateAtStart(db: Db, location: string, options: { secrets?: SecretBox } = {}): Promise<void> {
  try {
    await migrateToLatest(db, options);
    await probeWrite(db);
  } catch (err) {
    throw explainOpenFailure(err, location);
  }
}
