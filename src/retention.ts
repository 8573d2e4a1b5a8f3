import fs from 'node:fs/promises';
import path from 'node:path';
import type { RetentionConfig } from './config.js';
import type { Db } from './db/knex.js';
import type { Clock } from './lib/clock.js';
import type { Logger } from './logger.js';

const DAY_MS = 86_400_000;
/** A file younger than this may belong to a receipt being stored right now. */
const ORPHAN_GRACE_MS = DAY_MS;

export type Retention = ReturnType<typeof createRetention>;

/**
 * Data care, off unless configured: deletes finished sessions (with their transcripts)
 * untouched for `sessionDays`, and attachment files that no receipt refers to (left by
 * deleted organizations or interrupted downloads), once they are a day old.
 */
export function createRetention({ db, clock, logger, attachmentsDir, config }: { db: Db; clock: Clock; logger: Logger; attachmentsDir: string; config: RetentionConfig }) {
  async function pruneSessions(): Promise<number> {
    if (config.sessionDays === undefined) return 0;
    const before = new Date(clock().getTime() - config.sessionDays * DAY_MS).toISOString();
    // Messages go with their session (foreign key ON DELETE CASCADE).
    return db('sessions').whereIn('state', ['completed', 'failed']).whereRaw('not reply_due').where('updated_at', '<', before).delete();
  }

  async function pruneOrphanFiles(): Promise<number> {
    if (!config.orphanFiles) return 0;
    const cutoff = clock().getTime() - ORPHAN_GRACE_MS;
    let removed = 0;
    for (const file of await listFiles(attachmentsDir)) {
      const stat = await fs.stat(file).catch(() => undefined);
      if (!stat || stat.mtimeMs > cutoff) continue;
      const name = path.basename(file);
      const inTmp = path.basename(path.dirname(file)) === 'tmp';
      const referenced = !inTmp && /^[0-9a-f]{64}$/.test(name) && (await db('attachments').where({ sha256: name }).first('id')) !== undefined;
      if (referenced) continue;
      await fs.rm(file, { force: true });
      removed++;
    }
    return removed;
  }

  return {
    async run(): Promise<{ sessions: number; files: number }> {
      const result = { sessions: await pruneSessions(), files: await pruneOrphanFiles() };
      if (result.sessions || result.files) logger.info(result, 'retention removed old data');
      return result;
    },
  };
}

async function listFiles(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}
