import { dialectOf } from './db/dialect.js';
import type { Clock } from './lib/clock.js';
import { textIndexOf } from './entries/search/text-index.js';
import { deleteExpiredConsoleSessions } from './console/queries.js';
import { pendingMigrations } from './db/migrate.js';
import { type Db, openDatabase, probeWrite } from './db/knex.js';
import { checkCopyTarget, copyDatabase } from './db/copy.js';
import { pruneRateLimitHits } from './http/rate-limit-store.js';
import { pruneStreamDeltas } from './streams/queries.js';

export type Maintenance = ReturnType<typeof createMaintenance>;

/** Keeping the database in shape as it grows, and copying it; the jobs registry runs these. */
export function createMaintenance({ db, clock }: { db: Db; clock: Clock }) {
  return {
    /** The text index compacted (a step at a time) and the query planner's statistics kept current. */
    async maintainDatabase(): Promise<void> {
      await textIndexOf(db).merge(db);
      await dialectOf(db).optimize(db);
    },

    /** Console sign-ins that expired (connect-session-knex's own timer is off, see console/index.ts). */
    pruneConsoleSessions(): Promise<number> {
      return deleteExpiredConsoleSessions(db, clock().toISOString());
    },

    /** Event-stream deltas of a day ago and more (streams/queries.ts). */
    pruneStreamDeltas(): Promise<number> {
      return pruneStreamDeltas(db, new Date(clock().getTime() - 86_400_000).toISOString());
    },

    /** Rate-limit counters whose window has ended. */
    pruneRateLimits(): Promise<number> {
      return pruneRateLimitHits(db, clock().toISOString());
    },

    /** Resolves when the database takes writes (`probeWrite`). */
    writable(): Promise<void> {
      return probeWrite(db);
    },

    /** Migrations this code has that the database has not (a process behind its database is not ready). */
    pendingMigrations(): Promise<string[]> {
      return pendingMigrations(db);
    },

    /** Copies this (SQLite) install's data into the empty PostgreSQL database at `url` (db/copy.ts); rows per table. */
    async copyTo(url: string): Promise<Record<string, number>> {
      checkCopyTarget(url);
      const target = openDatabase(url, { poolSize: 2 });
      try {
        return await copyDatabase(db, target, url);
      } finally {
        await target.destroy();
      }
    },

    /** A consistent copy of a SQLite database while it serves; PostgreSQL refuses (pg_dump's job). */
    backup(file: string) {
      return dialectOf(db).backup(db, file);
    },
  };
}
