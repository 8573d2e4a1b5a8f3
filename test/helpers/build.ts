import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Compiles src/ into dist/ when the sources changed since the last build (src/build.mjs --if-stale); throws if it fails. */
export function buildIfStale(): void {
  const { status } = spawnSync(process.execPath, ['src/build.mjs', '--if-stale'], { cwd: root, stdio: ['ignore', 2, 2] });
  if (status !== 0) throw new Error(`src/build.mjs --if-stale failed (exit code ${status})`);
}
