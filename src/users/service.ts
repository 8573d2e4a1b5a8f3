import type { Db } from '../db/knex.js';
import { dialectOf } from '../db/dialect.js';
import { type Clock, isoNow } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import { ValidationError } from '../http/errors.js';
import { hashPassword, verifyPassword } from './passwords.js';

/** Verified against when the email is unknown, so response time does not tell which emails exist. */
let dummyHash: Promise<string> | undefined;
const dummy = () => (dummyHash ??= hashPassword('not a real password'));

export const USER_ROLES = ['admin', 'viewer'] as const;
export type UserRole = (typeof USER_ROLES)[number];

export const messages = {
  invalidEmail: 'Email is not a valid address',
  emailTaken: 'Email is already used by another user',
  passwordTooShort: 'Password must be at least 8 characters',
  invalidRole: `Role must be one of ${USER_ROLES.join(', ')}`,
};

const EMAIL = /^[^\s@]+@[^\s@]+$/;

export interface UserRow {
  id: string;
  organization_id: string;
  email: string;
  password_hash: string;
  role: UserRole;
  /** IANA zone the console writes times in for this user; null until their browser reports one (read as UTC). */
  time_zone: string | null;
  created_at: string;
}

export function createUserService({ db, clock }: { db: Db; clock: Clock }) {
  return {
    /** A console user of one organization; emails are unique across the install (they sign in by email alone). */
    async create(input: { organizationId: string; email: string; password: string; role?: string }) {
      const email = input.email.trim().toLowerCase();
      const role = input.role ?? 'viewer';
      if (!EMAIL.test(email)) throw new ValidationError(messages.invalidEmail);
      if (input.password.length < 8) throw new ValidationError(messages.passwordTooShort);
      if (!(USER_ROLES as readonly string[]).includes(role)) throw new ValidationError(messages.invalidRole);
      const row: UserRow = {
        id: newId(),
        organization_id: input.organizationId,
        email,
        password_hash: await hashPassword(input.password),
        role: role as UserRole,
        time_zone: null,
        created_at: isoNow(clock),
      };
      try {
        await db('users').insert(row);
      } catch (err) {
        if (dialectOf(db).isUniqueViolation(err)) throw new ValidationError(messages.emailTaken);
        throw err;
      }
      return { id: row.id, email: row.email, role: row.role };
    },

    async findById(id: string): Promise<UserRow | undefined> {
      return db<UserRow>('users').where({ id }).first();
    },

    /** The user with this email and password, or undefined; as slow for an unknown email as for a wrong password. */
    async verify(email: string, password: string): Promise<UserRow | undefined> {
      const user = await this.findByEmail(email);
      const ok = await verifyPassword(password, user?.password_hash ?? (await dummy()));
      return user && ok ? user : undefined;
    },

    /** Sets the user's zone (already checked by the caller). */
    async setTimeZone(id: string, timeZone: string): Promise<void> {
      await db('users').where({ id }).update({ time_zone: timeZone });
    },

    /** Sets the user's zone only if they have none yet: the one their browser reported at their first sign-in. True if set. */
    async setTimeZoneIfUnset(id: string, timeZone: string): Promise<boolean> {
      return (await db('users').where({ id }).whereNull('time_zone').update({ time_zone: timeZone })) === 1;
    },

    async findByEmail(email: string): Promise<UserRow | undefined> {
      return db<UserRow>('users').where({ email: email.trim().toLowerCase() }).first();
    },
  };
}
