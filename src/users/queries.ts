import type { Knex } from 'knex';
import type { Db } from '../db/knex.js';

export const USER_ROLES = ['admin', 'viewer'] as const;
export type UserRole = (typeof USER_ROLES)[number];

/** The password hash of an invited user who has not set one yet: no password verifies against it. */
export const NO_PASSWORD = '';

export interface UserRow {
  id: string;
  organization_id: string;
  email: string;
  password_hash: string;
  role: UserRole;
  /** IANA zone the console writes times in for this user; null until their browser reports one (read as UTC). */
  time_zone: string | null;
  /** Set while the user may not sign in; their console sessions end at their next request. */
  disabled_at: string | null;
  last_sign_in_at: string | null;
  /** Console sessions signed in before this end at their next request (set when the password changes). */
  sessions_valid_from: string | null;
  created_at: string;
}

export type PasswordLinkPurpose = 'invite' | 'reset';

export interface PasswordLinkRow {
  id: string;
  user_id: string;
  purpose: PasswordLinkPurpose;
  token_hash: string;
  expires_at: string;
  used_at: string | null;
  created_at: string;
}

/** A user as the Users page and `user list` show them. */
export type UserListRow = Pick<UserRow, 'id' | 'email' | 'role' | 'disabled_at' | 'last_sign_in_at' | 'created_at'> & { invited: boolean };

export async function insertUser(db: Db, row: UserRow): Promise<void> {
  await db('users').insert(row);
}

export async function findUserById(db: Db, id: string): Promise<UserRow | undefined> {
  return db<UserRow>('users').where({ id }).first();
}

export async function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return db<UserRow>('users').where({ email }).first();
}

/** The organization's users by email. */
export async function listUsers(db: Db, organizationId: string): Promise<UserListRow[]> {
  const rows = await db<UserRow>('users')
    .where({ organization_id: organizationId })
    .orderBy('email')
    .select('id', 'email', 'role', 'disabled_at', 'last_sign_in_at', 'created_at', db.raw('password_hash = ? as invited', [NO_PASSWORD]));
  // SQLite hands booleans back as 0 and 1.
  return rows.map((row) => ({ ...row, invited: Boolean((row as unknown as { invited: unknown }).invited) }));
}

/**
 * Keeps `query` (an UPDATE or DELETE of one user) to changes that leave the user's
 * organization an active admin: the user is not one now, or another active admin exists.
 * Read in the statement that writes, under the organization's lock (see `holdOrganization`).
 */
export function whereAnotherActiveAdminRemains(query: Knex.QueryBuilder, db: Db): Knex.QueryBuilder {
  return query.where((guard) =>
    guard
      .whereNot('role', 'admin')
      .orWhereNotNull('disabled_at')
      .orWhere('password_hash', NO_PASSWORD)
      .orWhereExists(
        db('users as other')
          .whereRaw('other.organization_id = users.organization_id')
          .whereRaw('other.id <> users.id')
          .where('other.role', 'admin')
          .whereNull('other.disabled_at')
          .whereNot('other.password_hash', NO_PASSWORD)
          .select(db.raw('1')),
      ),
  );
}

/** Changes one user's row unless that would leave their organization without an active admin; true if changed. */
export async function updateUserKeepingAnAdmin(db: Db, id: string, change: Partial<UserRow>): Promise<boolean> {
  return (await whereAnotherActiveAdminRemains(db('users').where({ id }).update(change), db)) === 1;
}

/** Deletes one user unless they are their organization's last active admin; true if deleted. */
export async function deleteUserKeepingAnAdmin(db: Db, id: string): Promise<boolean> {
  return (await whereAnotherActiveAdminRemains(db('users').where({ id }).delete(), db)) === 1;
}

export async function updateUser(db: Db, id: string, change: Partial<UserRow>): Promise<boolean> {
  return (await db('users').where({ id }).update(change)) === 1;
}

export async function setTimeZoneIfUnset(db: Db, id: string, timeZone: string): Promise<boolean> {
  return (await db('users').where({ id }).whereNull('time_zone').update({ time_zone: timeZone })) === 1;
}

export async function insertPasswordLink(db: Db, row: PasswordLinkRow): Promise<void> {
  await db('password_links').insert(row);
}

/** Withdraws the user's links not used yet (a newer one replaces them, the password was set another way, or the user was disabled). */
export async function deleteOpenPasswordLinks(db: Db, userId: string): Promise<void> {
  await db('password_links').where({ user_id: userId }).whereNull('used_at').delete();
}

export async function findPasswordLink(db: Db, tokenHash: string): Promise<PasswordLinkRow | undefined> {
  return db<PasswordLinkRow>('password_links').where({ token_hash: tokenHash }).first();
}

/** Marks the link used if it is still open and unexpired at `at`; the link as it was, or undefined (used, expired or unknown). */
export async function claimPasswordLink(db: Db, tokenHash: string, at: string): Promise<PasswordLinkRow | undefined> {
  const [row] = await db<PasswordLinkRow>('password_links')
    .where({ token_hash: tokenHash })
    .whereNull('used_at')
    .where('expires_at', '>', at)
    .update({ used_at: at })
    .returning('*');
  return row;
}
