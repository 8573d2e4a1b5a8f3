import type { Db } from '../db/knex.js';
import type { Logger } from '../logger.js';
import { type Clock, isoNow } from '../lib/clock.js';
import { newId, UUID_PATTERN } from '../lib/ids.js';
import { NotFoundError } from '../http/errors.js';
import { checkedName, messages as nameMessages } from '../http/names.js';
import { type ApiCaller, displayPrefix, generateApiKey, sameHash } from './api-keys.js';
import { tokenHash } from '../lib/token-hash.js';
import * as queries from './queries.js';
import { sharedLookup } from '../lib/batch-per-key.js';

export const messages = {
  organizationNotFound: 'Organization not found',
  keyNotFound: 'API key not found',
  ...nameMessages,
};

/** How often `last_used_at` is written per key at most: a busy key must not mean a write per call. */
const TOUCH_INTERVAL_MS = 60_000;

export type OrganizationService = ReturnType<typeof createOrganizationService>;

export function createOrganizationService({ db, clock, logger }: { db: Db; clock: Clock; logger: Logger }) {
  const lastTouched = new Map<string, number>();
  // Every API call asks this: concurrent calls with one key share the lookup.
  const findActiveKey = sharedLookup(
    (keyHash: string) => keyHash,
    (keyHash: string) => queries.findActiveApiKeyByHash(db, keyHash),
  );

  function touch(keyId: string): void {
    const now = clock().getTime();
    if (now - (lastTouched.get(keyId) ?? 0) < TOUCH_INTERVAL_MS) return;
    lastTouched.set(keyId, now);
    queries.touchApiKey(db, keyId, new Date(now).toISOString()).catch((err: unknown) => {
      logger.warn({ err, keyId }, 'could not record API key use');
    });
  }

  return {
    async createOrganization({ name }: { name: string }) {
      const row = { id: newId(), name: checkedName(name), created_at: isoNow(clock) };
      await queries.insertOrganization(db, row);
      return row;
    },

    /** Every organization of the install, oldest first (the operator's `org list`). */
    listOrganizations: () => queries.listOrganizations(db),

    async getOrganization(id: string) {
      const org = UUID_PATTERN.test(id) ? await queries.findOrganization(db, id) : undefined;
      if (!org) throw new NotFoundError(messages.organizationNotFound);
      return org;
    },

    /**
     * Creates a key and returns it in clear: the only time it is ever visible.
     * `key` may be given to seed a known demo key.
     */
    async createApiKey({ organizationId, name, key = generateApiKey() }: { organizationId: string; name?: string; key?: string }) {
      await this.getOrganization(organizationId);
      // Unnamed, a key is called "API key".
      const keyName = name?.trim() ? checkedName(name) : 'API key';
      const id = newId();
      await queries.insertApiKey(db, {
        id,
        organization_id: organizationId,
        name: keyName,
        key_hash: tokenHash(key),
        prefix: displayPrefix(key),
        created_at: isoNow(clock),
        last_used_at: null,
        revoked_at: null,
      });
      return { id, key };
    },

    async listApiKeys(organizationId: string) {
      return queries.listApiKeys(db, organizationId);
    },

    /** Revoking twice is harmless; an unknown key (or, given `organizationId`, another organization's) is an error. */
    async revokeApiKey(id: string, organizationId?: string) {
      const key = UUID_PATTERN.test(id) ? await queries.findApiKey(db, id) : undefined;
      if (!key || (organizationId !== undefined && key.organization_id !== organizationId)) throw new NotFoundError(messages.keyNotFound);
      await queries.revokeApiKey(db, id, isoNow(clock));
      return { id, revoked: true as const };
    },

    /** The caller behind a key, or null when it matches no active key. */
    async authenticate(key: string): Promise<ApiCaller | null> {
      const keyHash = tokenHash(key);
      const row = await findActiveKey(keyHash);
      if (!row || !sameHash(row.key_hash, keyHash)) return null;
      touch(row.id);
      return { organizationId: row.organization_id, keyId: row.id, label: `${row.name || 'key'} (${row.prefix}…)` };
    },
  };
}
