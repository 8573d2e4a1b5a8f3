import crypto from 'node:crypto';
import { keptInDataDir } from '../lib/data-dir-secret.js';

/**
 * The console's session signing secret: SESSION_SECRET when set; otherwise generated once
 * and kept in the data directory (`session-secret`).
 */
export function resolveSessionSecret(configured: string | undefined, dataDir: string): string {
  return configured ?? keptInDataDir(dataDir, 'session-secret', () => crypto.randomBytes(32).toString('base64url'));
}
