import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The project folder (the one holding package.json), whether this runs from the
 * TypeScript sources (tsx) or from `dist/`: views and public files are not compiled, so
 * they are found from here in both layouts.
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
