import crypto from 'node:crypto';
import path from 'node:path';
import { ConfigError, type Config } from '../config.js';
import type { Db } from '../db/knex.js';
import { keptInDataDir } from '../lib/data-dir-secret.js';
import { createSecretBox, type SecretBox } from './secret-box.js';
import { insertSettingIfAbsent, readSetting } from './queries.js';

/** The file in DATA_DIR that holds the key when SECRETS_KEY is unset. */
export const KEY_FILE = 'secrets-key';
const KEY_SETTING = 'secrets_key_id';

export const messages = {
  badKeyFile: (file: string) => `${file} must hold 32 bytes in base64 (or set SECRETS_KEY)`,
  otherKey: (stored: string, keyId: string) =>
    `SECRETS_KEY: this database's secrets are sealed with key ${stored}, but this process has key ${keyId}; give every process on one database the same SECRETS_KEY`,
};

/** The install's secret box: SECRETS_KEY when set, else a key generated once and kept in DATA_DIR. */
export function openSecretBox(config: Pick<Config, 'secretsKey' | 'dataDir'>): SecretBox {
  const text = config.secretsKey ?? keptInDataDir(config.dataDir, KEY_FILE, () => crypto.randomBytes(32).toString('base64'));
  const key = Buffer.from(text, 'base64');
  if (key.length !== 32) throw new ConfigError(messages.badKeyFile(path.join(config.dataDir, KEY_FILE)));
  return createSecretBox(key);
}

/**
 * Records which key seals this database's secrets, or checks that it is this process's: a
 * machine started without the shared SECRETS_KEY stops at once, saying so, rather than
 * failing every webhook and model call that needs a secret.
 */
export async function checkSecretsKey(db: Db, box: SecretBox, at: string): Promise<void> {
  // Read first: a process on a database that has its key writes nothing (and waits for no writer).
  if ((await readSetting(db, KEY_SETTING)) === undefined) await insertSettingIfAbsent(db, KEY_SETTING, box.keyId, at);
  const stored = await readSetting(db, KEY_SETTING);
  if (stored !== box.keyId) throw new ConfigError(messages.otherKey(stored ?? 'none', box.keyId));
}
