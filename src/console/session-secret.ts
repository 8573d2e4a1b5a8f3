import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * The console's session signing secret: SESSION_SECRET when set; otherwise generated once
 * and kept in the data directory (readable by the service's user only), so sign-ins
 * survive restarts without an operator having to make one up.
 */
export function resolveSessionSecret(configured: string | undefined, dataDir: string): string {
  if (configured) return configured;
  const file = path.join(dataDir, 'session-secret');
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fs.mkdirSync(dataDir, { recursive: true });
  const secret = crypto.randomBytes(32).toString('base64url');
  try {
    // `wx`: if another process made it meanwhile, theirs wins and is read below.
    fs.writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    return secret;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return fs.readFileSync(file, 'utf8').trim();
  }
}
