import fs from 'node:fs';
import path from 'node:path';

/**
 * A secret generated once and kept in a file of the data directory (readable by the service's
 * user only), so an install works without the operator making one up and keeps it across
 * restarts. Processes that start together agree: the first to write the file wins.
 */
export function keptInDataDir(dataDir: string, fileName: string, generate: () => string): string {
  const file = path.join(dataDir, fileName);
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fs.mkdirSync(dataDir, { recursive: true });
  const secret = generate();
  try {
    // `wx`: if another process made it meanwhile, theirs wins and is read below.
    fs.writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    return secret;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return fs.readFileSync(file, 'utf8').trim();
  }
}
