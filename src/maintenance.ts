import type { Db } from './db/knex.js';
import { dialectOf } from './db/dialect.js';
import type { Clock } from './lib/clock.js';
import { textIndexOf } from './entries/search/text-index.js';
import { deleteExpiredConsoleSessions } from './console/queries.js';

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

    /** A consistent copy of a SQLite database while it serves; PostgreSQL refuses (pg_dump's job). */
    backup(file: string) {
      return dialectOf(db).backup(db, file);
    },
  };
}
