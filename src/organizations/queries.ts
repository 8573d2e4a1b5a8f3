import type { Db } from '../db/knex.js';

export interface OrganizationRow {
  id: string;
  name: string;
  created_at: string;
}

export interface ApiKeyRow {
  id: string;
  organization_id: string;
  name: string;
  key_hash: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export async function insertOrganization(db: Db, row: OrganizationRow): Promise<void> {
  await db('organizations').insert(row);
}

export async function listOrganizations(db: Db): Promise<OrganizationRow[]> {
  return db<OrganizationRow>('organizations').orderBy([{ column: 'created_at' }, { column: 'id' }]);
}

export async function findOrganization(db: Db, id: string): Promise<OrganizationRow | undefined> {
  return db<OrganizationRow>('organizations').where({ id }).first();
}

export async function insertApiKey(db: Db, row: ApiKeyRow): Promise<void> {
  await db('api_keys').insert(row);
}

export async function findApiKey(db: Db, id: string): Promise<ApiKeyRow | undefined> {
  return db<ApiKeyRow>('api_keys').where({ id }).first();
}

/** Served by the unique index on key_hash; reads only what authentication needs. */
export async function findActiveApiKeyByHash(db: Db, keyHash: string): Promise<Pick<ApiKeyRow, 'id' | 'organization_id' | 'key_hash' | 'name' | 'prefix'> | undefined> {
  return db<ApiKeyRow>('api_keys').where({ key_hash: keyHash }).whereNull('revoked_at').first('id', 'organization_id', 'key_hash', 'name', 'prefix');
}

export async function revokeApiKey(db: Db, id: string, at: string): Promise<void> {
  await db('api_keys').where({ id }).whereNull('revoked_at').update({ revoked_at: at });
}

export async function touchApiKey(db: Db, id: string, at: string): Promise<void> {
  await db('api_keys').where({ id }).update({ last_used_at: at });
}

/** The organization's keys, newest first, without their hashes. */
export async function listApiKeys(db: Db, organizationId: string): Promise<Array<Omit<ApiKeyRow, 'key_hash'>>> {
  return db<ApiKeyRow>('api_keys')
    .where({ organization_id: organizationId })
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .select('id', 'organization_id', 'name', 'prefix', 'created_at', 'last_used_at', 'revoked_at');
}
