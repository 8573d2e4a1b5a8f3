import { createHash } from 'node:crypto';

/**
 * What is stored of a random credential (an API key, a password link's token, a webhook
 * channel's token): its SHA-256, so that a copy of the database holds none of them, and a
 * presented one is found by hashing it the same way. Random tokens need no slow hash.
 */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
