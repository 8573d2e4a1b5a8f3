import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The project folder (the one holding package.json), whether this runs from the
 * TypeScript sources (tsx), from tsc's output in `dist/src/` or from the bundles in `dist/`
 * (src/build.mjs): files are found from here, never from where the running code sits.
 */
function findRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('package.json not found above the sources');
    dir = parent;
  }
  return dir;
}

export const PROJECT_ROOT = findRoot();
export const VIEWS_DIR = path.join(PROJECT_ROOT, 'views');
export const PUBLIC_DIR = path.join(PROJECT_ROOT, 'public');

/** Whether this runs from the TypeScript sources (under tsx, as the tests do), not from a build in dist/. */
export const FROM_SOURCES = import.meta.url.endsWith('.ts');

/**
 * Folders Scribe makes for data (DATA_DIR, attachments, a database's or a backup's folder): for
 * its user alone, whatever the umask, since everything in them (tasks, transcripts, entries,
 * files) is the organizations' data. Folders that exist already keep their mode.
 */
export const DATA_FOLDER_MODE = 0o700;

/** A backup: the whole database, for its user alone (a cron job's umask leaves files readable by all). */
export const BACKUP_FILE_MODE = 0o600;
