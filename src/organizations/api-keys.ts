import { randomBytes, timingSafeEqual } from 'node:crypto';

/** The organization and key an API call acts for. */
export interface ApiCaller {
  organizationId: string;
  keyId: string;
  /** How the audit log names the key: its name and prefix. */
  label: string;
}

const KEY_PREFIX = 'sk_';

/** A new key: 32 random bytes, so a fast hash is enough to store it safely. */
export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** What staff see to tell keys apart: the start of the key, too short to use. */
export function displayPrefix(key: string): string {
  return key.slice(0, 10);
}

/** Compares two hex digests without leaking where they first differ. */
export function sameHash(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}
