import fs from 'node:fs';
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import type { Db } from './knex.js';

/**
 * A consistent copy of the database while the server keeps running: SQLite's online
 * backup API (better-sqlite3's `backup()`), which copies page by page and restarts
 * around concurrent writes. The SQLite-specific part of backups, in one place; on
 * PostgreSQL this is pg_dump's job. Writes to `<file>.partial` and renames at the end,
 * so a file at `file` is always a whole backup.
 */
export async function backupDatabase(db: Db, file: string): Promise<{ file: string; bytes: number }> {
  const target = path.resolve(file);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const partial = `${target}.partial`;
  fs.rmSync(partial, { force: true });
  const connection = (await db.client.acquireConnection()) as BetterSqlite3.Database;
  try {
    await connection.backup(partial);
  } finally {
    await db.client.releaseConnection(connection);
  }
  fs.renameSync(partial, target);
  return { file: target, bytes: fs.statSync(target).size };
}
