import { randomBytes } from 'node:crypto';
import { tokenHash } from '../lib/token-hash.js';
import type { Db } from '../db/knex.js';
import { dialectOf } from '../db/dialect.js';
import { type Clock, isoNow } from '../lib/clock.js';
import { UUID_PATTERN, newId } from '../lib/ids.js';
import { HttpError, NotFoundError, ValidationError } from '../http/errors.js';
import type { Actor, AuditLog } from '../audit/service.js';
import { PASSWORD_COST, type PasswordCost, hashPassword as hashAtCost, verifyPassword } from './passwords.js';
import * as queries from './queries.js';
import { NO_PASSWORD, USER_ROLES, type PasswordLinkPurpose, type UserListRow, type UserRole, type UserRow } from './queries.js';

export { USER_ROLES };
export type { PasswordLinkPurpose, UserListRow, UserRole, UserRow };

/** How long an invitation or a reset link may be used. */
export const LINK_VALID_MS = 7 * 24 * 3_600_000;

export const messages = {
  invalidEmail: 'Email is not a valid address',
  emailTooLong: 'Email must be at most 320 characters',
  emailTaken: 'Email is already used by another user',
  passwordTooShort: 'Password must be at least 8 characters',
  passwordsDiffer: 'The two new passwords do not match',
  currentPasswordWrong: 'Current password is wrong',
  invalidRole: `Role must be one of ${USER_ROLES.join(', ')}`,
  userNotFound: 'User not found',
  lastAdmin: 'An organization needs an active admin',
  userDisabled: 'User is disabled: enable them first',
  linkUnknown: 'This link is not valid: check that it was copied whole, or ask an admin for a new one.',
  linkUsed: 'This link was already used. Ask an admin for a new one if you need to set your password again.',
  linkExpired: 'This link has expired: links are valid for 7 days. Ask an admin for a new one.',
};

/** 410: an invitation or reset link that can no longer be used. */
export class LinkRefusedError extends HttpError {
  constructor(message: string) {
    super(410, message);
  }
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** A user's state as staff see it: invited (no password yet), disabled, or active. */
export function userState(user: Pick<UserRow, 'disabled_at'> & { invited: boolean }): 'active' | 'disabled' | 'invited' {
  return user.disabled_at ? 'disabled' : user.invited ? 'invited' : 'active';
}

function checkPassword(password: string): void {
  if (password.length < 8) throw new ValidationError(messages.passwordTooShort);
}

function checkRole(role: string): UserRole {
  if (!(USER_ROLES as readonly string[]).includes(role)) throw new ValidationError(messages.invalidRole);
  return role as UserRole;
}

export type UserService = ReturnType<typeof createUserService>;

/**
 * Console users. Changes staff make are audited with the actor given, and never with a
 * password or a link's token. `publicUrl` (PUBLIC_URL) makes links absolute.
 */
export function createUserService({
  db,
  clock,
  audit,
  publicUrl,
  passwordCost = PASSWORD_COST,
}: {
  db: Db;
  clock: Clock;
  audit: AuditLog;
  publicUrl?: string;
  /** scrypt's cost for passwords set from now on; each hash records its own, so any stays verifiable. */
  passwordCost?: PasswordCost;
}) {
  const hashPassword = (password: string) => hashAtCost(password, passwordCost);
  /** Verified against when the email is unknown, so response time does not tell which emails exist. */
  let dummyHash: Promise<string> | undefined;
  const dummy = () => (dummyHash ??= hashPassword('not a real password'));

  const linkUrl = (token: string) => `${publicUrl ?? ''}/invite/${token}`;

  /** The actor's organization's user `id`; 404 otherwise, also for other organizations' users. */
  async function ofActor(actor: Actor, id: string): Promise<UserRow> {
    const user = UUID_PATTERN.test(id) ? await queries.findUserById(db, id) : undefined;
    if (!user || user.organization_id !== actor.organizationId) throw new NotFoundError(messages.userNotFound);
    return user;
  }

  /**
   * A new password set otherwise than at a link (by the user, or by the operator): sessions
   * signed in before `at` end, and links not used yet are withdrawn, since whoever holds one
   * could set the password again and take the account.
   */
  async function replacePassword(actor: Actor, user: UserRow, passwordHash: string, at: string): Promise<void> {
    await db.transaction(async (trx) => {
      await queries.updateUser(trx, user.id, { password_hash: passwordHash, sessions_valid_from: at });
      await queries.deleteOpenPasswordLinks(trx, user.id);
      await audit.record(actor, 'user.password', { type: 'user', id: user.id }, user.email, trx);
    });
  }

  /**
   * Runs `change` (one guarded statement) under the organization's lock, so that two admins
   * demoting each other at once cannot both succeed; refuses what would leave no active admin.
   */
  async function keepingAnAdmin(user: UserRow, change: (trx: Db) => Promise<boolean>): Promise<void> {
    const done = await db.transaction(async (trx) => {
      await dialectOf(trx).holdRows(trx, 'organizations', [user.organization_id]);
      return change(trx);
    });
    if (done) return;
    if (!(await queries.findUserById(db, user.id))) throw new NotFoundError(messages.userNotFound);
    throw new ValidationError(messages.lastAdmin);
  }

  /** A new one-time link for the user, replacing their open ones; the URL holds the token, which is kept nowhere. */
  async function issueLink(user: UserRow, purpose: PasswordLinkPurpose, trx: Db = db): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    const now = clock();
    await queries.deleteOpenPasswordLinks(trx, user.id);
    await queries.insertPasswordLink(trx, {
      id: newId(),
      user_id: user.id,
      purpose,
      token_hash: tokenHash(token),
      expires_at: new Date(now.getTime() + LINK_VALID_MS).toISOString(),
      used_at: null,
      created_at: now.toISOString(),
    });
    return linkUrl(token);
  }

  async function insertNew(input: { organizationId: string; email: string; role?: string }, passwordHash: string, trx: Db): Promise<UserRow> {
    const email = input.email.trim().toLowerCase();
    if (!EMAIL.test(email)) throw new ValidationError(messages.invalidEmail);
    if (email.length > 320) throw new ValidationError(messages.emailTooLong);
    const row: UserRow = {
      id: newId(),
      organization_id: input.organizationId,
      email,
      password_hash: passwordHash,
      role: checkRole(input.role ?? 'viewer'),
      time_zone: null,
      disabled_at: null,
      last_sign_in_at: null,
      sessions_valid_from: null,
      created_at: isoNow(clock),
    };
    try {
      await queries.insertUser(trx, row);
    } catch (err) {
      if (dialectOf(db).isUniqueViolation(err)) throw new ValidationError(messages.emailTaken);
      throw err;
    }
    return row;
  }

  return {
    /** A console user of one organization; emails are unique across the install (they sign in by email alone). */
    async create(input: { organizationId: string; email: string; password: string; role?: string }, actor?: Actor) {
      checkPassword(input.password);
      checkRole(input.role ?? 'viewer');
      const row = await insertNew(input, await hashPassword(input.password), db);
      if (actor) await audit.record(actor, 'user.create', { type: 'user', id: row.id }, `${row.email} (${row.role})`);
      return { id: row.id, email: row.email, role: row.role };
    },

    /** A user with no password yet, and the link at which they set one (shown once). */
    async invite(actor: Actor, input: { email: string; role?: string }) {
      return db.transaction(async (trx) => {
        const row = await insertNew({ ...input, organizationId: actor.organizationId }, NO_PASSWORD, trx);
        const url = await issueLink(row, 'invite', trx);
        await audit.record(actor, 'user.invite', { type: 'user', id: row.id }, `${row.email} (${row.role})`, trx);
        return { id: row.id, email: row.email, role: row.role, url };
      });
    },

    /** The organization's users by email, each with whether they have yet to accept their invitation. */
    list: (organizationId: string) => queries.listUsers(db, organizationId),

    async findById(id: string): Promise<UserRow | undefined> {
      return UUID_PATTERN.test(id) ? queries.findUserById(db, id) : undefined;
    },

    /** The organization the user `id` belongs to (for the CLI, which names users by id alone). */
    async organizationOf(id: string): Promise<string> {
      const user = await this.findById(id);
      if (!user) throw new NotFoundError(messages.userNotFound);
      return user.organization_id;
    },

    /** The user with this email and password, or undefined; as slow for an unknown, invited or disabled account as for a wrong password. */
    async verify(email: string, password: string): Promise<UserRow | undefined> {
      const user = await this.findByEmail(email);
      const usable = user && user.password_hash !== NO_PASSWORD && !user.disabled_at;
      const ok = await verifyPassword(password, usable ? user.password_hash : await dummy());
      return usable && ok ? user : undefined;
    },

    async recordSignIn(id: string): Promise<void> {
      await queries.updateUser(db, id, { last_sign_in_at: isoNow(clock) });
    },

    async setRole(actor: Actor, id: string, role: string): Promise<UserRow> {
      const next = checkRole(role);
      const user = await ofActor(actor, id);
      if (user.role === next) return user;
      // Promoting takes no admin away; demoting must leave one.
      await keepingAnAdmin(user, (trx) => (next === 'admin' ? queries.updateUser(trx, id, { role: next }) : queries.updateUserKeepingAnAdmin(trx, id, { role: next })));
      await audit.record(actor, 'user.role', { type: 'user', id }, `${user.email}: ${user.role} → ${next}`);
      return { ...user, role: next };
    },

    /**
     * Disables or enables the user. A disabled user's open links are withdrawn and their
     * sessions end at their next request: ended for good, so enabling the user again does not
     * bring back a session that made no request meanwhile.
     */
    async setDisabled(actor: Actor, id: string, disabled: boolean): Promise<UserRow> {
      const user = await ofActor(actor, id);
      if (Boolean(user.disabled_at) === disabled) return user;
      const disabledAt = disabled ? isoNow(clock) : null;
      if (disabled) {
        await keepingAnAdmin(user, async (trx) => {
          const done = await queries.updateUserKeepingAnAdmin(trx, id, { disabled_at: disabledAt, sessions_valid_from: disabledAt });
          if (done) await queries.deleteOpenPasswordLinks(trx, id);
          return done;
        });
      } else {
        await queries.updateUser(db, id, { disabled_at: null });
      }
      await audit.record(actor, disabled ? 'user.disable' : 'user.enable', { type: 'user', id }, user.email);
      return { ...user, disabled_at: disabledAt };
    },

    /** Deletes the user (their sessions end at their next request); the audit log keeps their email. */
    async remove(actor: Actor, id: string): Promise<UserRow> {
      const user = await ofActor(actor, id);
      await keepingAnAdmin(user, (trx) => queries.deleteUserKeepingAnAdmin(trx, id));
      await audit.record(actor, 'user.delete', { type: 'user', id }, user.email);
      return user;
    },

    /** A new link at which the user sets a password (an invitation again if they never set one); shown once. */
    async reset(actor: Actor, id: string): Promise<{ user: UserRow; url: string }> {
      const user = await ofActor(actor, id);
      if (user.disabled_at) throw new ValidationError(messages.userDisabled);
      const purpose = user.password_hash === NO_PASSWORD ? 'invite' : 'reset';
      const url = await db.transaction(async (trx) => {
        const link = await issueLink(user, purpose, trx);
        await audit.record(actor, purpose === 'invite' ? 'user.invite' : 'user.reset', { type: 'user', id }, user.email, trx);
        return link;
      });
      return { user, url };
    },

    /** Sets the user's password as the operator (the admin CLI); the user's console sessions end, and any link not used yet is withdrawn. */
    async setPassword(actor: Actor, id: string, password: string): Promise<void> {
      checkPassword(password);
      const user = await ofActor(actor, id);
      await replacePassword(actor, user, await hashPassword(password), isoNow(clock));
    },

    /**
     * The signed-in user changes their own password: the current one is required. Their other
     * sessions end, and any link not used yet is withdrawn; the caller keeps the one that asked
     * by marking it signed in at the time returned.
     */
    async changePassword(user: UserRow, input: { current: string; password: string; confirmation: string }): Promise<string> {
      if (!(await verifyPassword(input.current, user.password_hash))) throw new ValidationError(messages.currentPasswordWrong);
      checkPassword(input.password);
      if (input.password !== input.confirmation) throw new ValidationError(messages.passwordsDiffer);
      const passwordHash = await hashPassword(input.password);
      const now = isoNow(clock);
      await replacePassword({ type: 'user', id: user.id, label: user.email, organizationId: user.organization_id }, user, passwordHash, now);
      return now;
    },

    /** What the link with `token` is for, if it can still be used; 410 with the reason otherwise. */
    async openLink(token: string): Promise<{ purpose: PasswordLinkPurpose; user: UserRow }> {
      const link = await queries.findPasswordLink(db, tokenHash(token));
      const user = link && (await queries.findUserById(db, link.user_id));
      if (!link || !user || user.disabled_at) throw new LinkRefusedError(messages.linkUnknown);
      if (link.used_at) throw new LinkRefusedError(messages.linkUsed);
      if (link.expires_at <= isoNow(clock)) throw new LinkRefusedError(messages.linkExpired);
      return { purpose: link.purpose, user };
    },

    /** Sets the password at the link, once: the link is used up in the same transaction and the user's other sessions end. Returns the user, signed in by the caller. */
    async acceptLink(token: string, input: { password: string; confirmation: string }): Promise<UserRow> {
      const { user } = await this.openLink(token);
      checkPassword(input.password);
      if (input.password !== input.confirmation) throw new ValidationError(messages.passwordsDiffer);
      const passwordHash = await hashPassword(input.password);
      const now = isoNow(clock);
      const purpose = await db.transaction(async (trx) => {
        const link = await queries.claimPasswordLink(trx, tokenHash(token), now);
        // Used or expired between the page and the form (or by two tabs at once).
        if (!link) return undefined;
        await queries.updateUser(trx, link.user_id, { password_hash: passwordHash, last_sign_in_at: now, sessions_valid_from: now });
        const actor: Actor = { type: 'user', id: user.id, label: user.email, organizationId: user.organization_id };
        await audit.record(actor, link.purpose === 'invite' ? 'user.accept_invite' : 'user.password', { type: 'user', id: user.id }, user.email, trx);
        return link.purpose;
      });
      if (!purpose) {
        await this.openLink(token);
        throw new LinkRefusedError(messages.linkUsed);
      }
      return { ...user, password_hash: passwordHash, last_sign_in_at: now, sessions_valid_from: now };
    },

    /** Sets the user's zone (already checked by the caller). */
    async setTimeZone(id: string, timeZone: string): Promise<void> {
      await queries.updateUser(db, id, { time_zone: timeZone });
    },

    /** Sets the user's zone only if they have none yet: the one their browser reported at their first sign-in. True if set. */
    async setTimeZoneIfUnset(id: string, timeZone: string): Promise<boolean> {
      return queries.setTimeZoneIfUnset(db, id, timeZone);
    },

    async findByEmail(email: string): Promise<UserRow | undefined> {
      return queries.findUserByEmail(db, email.trim().toLowerCase());
    },
  };
}
