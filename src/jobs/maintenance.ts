import { type Db, optimizeDatabase } from '../db/knex.js';
import { mergeTextIndex } from '../entries/search/text-match.js';

/** Keeps the database quick as it grows; run at start and daily (see registry.ts). */
export async function maintainDatabase(db: Db): Promise<void> {
  await mergeTextIndex(db);
  await optimizeDatabase(db);
}
