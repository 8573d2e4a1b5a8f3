import crypto from 'node:crypto';
import { ConfigError } from '../config.js';

/** Sealed values start with this; anything else was stored in clear before sealing existed. */
const PREFIX = 'sealed:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export const messages = {
  otherKey: (sealedWith: string, keyId: string) =>
    `SECRETS_KEY: a stored secret is sealed with key ${sealedWith}, but this process has key ${keyId}; give every process on one database the same SECRETS_KEY`,
  damaged: 'A stored secret could not be opened: it is damaged',
};

/**
 * Seals the secrets the service must use in clear (scribes' model keys, MCP headers, signing
 * secrets) with AES-256-GCM under a key kept outside the database, so that a copy of the
 * database without the key holds none of them in clear.
 */
export interface SecretBox {
  /** Names the key without revealing it (the first 8 hex digits of its SHA-256); stored with each sealed value. */
  readonly keyId: string;
  seal(text: string): string;
  /** The clear text of a sealed value; a value stored in clear (before sealing existed) is returned as it is. */
  open(value: string): string;
}

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('a secret box needs a 32-byte key');
  const keyId = keyIdOf(key);
  return {
    keyId,
    seal(text) {
      const iv = crypto.randomBytes(IV_BYTES);
      const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
      const sealed = Buffer.concat([iv, cipher.update(text, 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return `${PREFIX}${keyId}:${sealed.toString('base64url')}`;
    },
    open(value) {
      if (!isSealed(value)) return value;
      const [sealedWith, payload = ''] = value.slice(PREFIX.length).split(':');
      if (sealedWith !== keyId) throw new ConfigError(messages.otherKey(sealedWith!, keyId));
      const bytes = Buffer.from(payload, 'base64url');
      if (bytes.length < IV_BYTES + TAG_BYTES) throw new Error(messages.damaged);
      const decipher = crypto.createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      try {
        return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
      } catch {
        throw new Error(messages.damaged);
      }
    },
  };
}

export function isSealed(value: string): boolean {
  return value.startsWith(PREFIX);
}

export function keyIdOf(key: Buffer): string {
  return crypto.createHash('sha256').update(key).digest('hex').slice(0, 8);
}
