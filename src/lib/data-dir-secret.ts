import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../config-error.js';
import { FILE_PROBLEMS } from './file-problems.js';
import { DATA_FOLDER_MODE } from './paths.js';

/**
 * A secret generated once and kept in a file of the data directory (readable by the service's
 * user only), so an install works without the operator making one up and keeps it across
 * restarts. Processes that start together agree: the first to write the file wins.
 */
export function keptInDataDir(dataDir: string, fileName: string, generate: () => string): string {
  try {
    return readOrWrite(dataDir, fileName, generate);
  } catch (err) {
    const reason = FILE_PROBLEMS[(err as NodeJS.ErrnoException).code ?? ''];
    if (reason === undefined) throw err;
    // Said in one line at start (a ConfigError), as a bad variable is.
    throw new ConfigError(`Cannot use DATA_DIR ${dataDir}: ${reason} (${fileName}).`);
  }
}

function readOrWrite(dataDir: string, fileName: string, generate: () => string): string {
  const file = path.join(dataDir, fileName);
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fs.mkdirSync(dataDir, { recursive: true, mode: DATA_FOLDER_MODE });
  const secret = generate();
  // Written whole under a name of its own, then linked into place: a process that loses the
  // race reads the winner's file complete, never half-written.
  const draft = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}`;
  fs.writeFileSync(draft, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  try {
    fs.linkSync(draft, file);
    return secret;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return fs.readFileSync(file, 'utf8').trim();
  } finally {
    fs.rmSync(draft, { force: true });
  }
}
