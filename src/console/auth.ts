import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';
import type { Actor } from '../audit/service.js';
import { HttpError } from '../http/errors.js';
import type { UserRow } from '../users/service.js';
import type { Services } from '../services.js';
import { canonicalTimeZone } from '../lib/time-zones.js';
import { isoNow } from '../lib/clock.js';
import { render } from './views.js';
import type { Flash } from './forms.js';

declare module 'express-session' {
  interface SessionData {
    userId?: string;
    /** When this session signed in (the services' clock): sessions older than the user's last password change end. */
    signedInAt?: string;
    flash?: Flash;
    /** Forms answered with a secret lately: each one's `_once` token and the address of what it made (console/forms.ts). */
    sentForms?: Array<[token: string, madeAt: string]>;
  }
}

declare module 'express-serve-static-core' {
  interface Request {
    /** The signed-in console user, set by `loadUser`. */
    user?: UserRow;
  }
}

export const messages = {
  badLogin: 'Email or password is wrong.',
  throttled: 'Too many sign-in attempts. Wait a few minutes and try again.',
  adminOnly: 'Only admins can change this.',
};

/** Failed sign-ins allowed per address and email in the window, before 429; and per address, whatever the email. */
export const LOGIN_ATTEMPTS = { limit: 10, perAddress: 50, windowMs: 15 * 60_000 };

export class ForbiddenError extends HttpError {
  constructor(message = messages.adminOnly) {
    super(403, message);
  }
}

/** The signed-in user as the audit log names them. */
export function userActor(req: Request): Actor {
  const user = req.user!;
  return { type: 'user', id: user.id, label: user.email, organizationId: user.organization_id };
}

/**
 * Sets `req.user` from the session. The user's row is read on every request (by primary key),
 * so a session whose user was deleted or disabled, or that signed in before their password
 * last changed, ends at its next request, whichever process made the change.
 */
export function loadUser(services: Services): RequestHandler {
  return async (req, _res, next) => {
    const id = req.session.userId;
    if (id) {
      const user = await services.users.findById(id);
      const current = user && !user.disabled_at && (!user.sessions_valid_from || (req.session.signedInAt ?? '') >= user.sessions_valid_from);
      if (current) req.user = user;
      else delete req.session.userId;
    }
    next();
  };
}

/** Signs `user` in on a new session id (a session fixed before it is worth nothing after) and redirects to `to`. */
export function signInAs(services: Services, req: Request, res: Response, next: NextFunction, user: UserRow, to: string): void {
  req.session.regenerate((err) => {
    if (err) return next(err);
    req.session.userId = user.id;
    req.session.signedInAt = isoNow(services.clock);
    res.redirect(303, to);
  });
}

/** Every console page needs a signed-in user; others are sent to sign in and come back. */
export const requireUser: RequestHandler = (req, res, next) => {
  if (req.user) return next();
  const back = req.method === 'GET' && req.originalUrl !== '/' ? `?next=${encodeURIComponent(req.originalUrl)}` : '';
  res.redirect(303, `/login${back}`);
};

/** Changes are for admins; viewers read only. Checked on the server for every action. */
export const requireAdmin: RequestHandler = (req, _res, next) => {
  if (req.user?.role !== 'admin') throw new ForbiddenError();
  next();
};

/** Only same-site paths, so a crafted `next` cannot send a user elsewhere after sign-in. */
function safeNext(value: unknown): string {
  return typeof value === 'string' && /^\/(?![/\\])/.test(value) ? value : '/';
}

export function authRoutes(services: Services, { limit = LOGIN_ATTEMPTS.limit, perAddress = LOGIN_ATTEMPTS.perAddress } = {}): Router {
  const router = Router();

  const loginPage = (res: Response, status: number, locals: { email?: string; error?: string; next?: string }) =>
    render(res, 'login', { title: 'Sign in', email: '', error: null, next: '/', ...locals }, status);

  // Failed sign-ins are counted per address and email (guessing one password), and per
  // address alone (trying many accounts); a successful sign-in does not count.
  const throttle = (name: string, max: number, key: (req: Request) => string) =>
    rateLimit({
      store: services.rateLimitStore(name),
      windowMs: LOGIN_ATTEMPTS.windowMs,
      limit: max,
      skipSuccessfulRequests: true,
      standardHeaders: 'draft-8',
      legacyHeaders: false,
      keyGenerator: key,
      handler: (req, res) => loginPage(res, 429, { email: String(req.body?.email ?? ''), error: messages.throttled, next: safeNext(req.body?.next) }),
    });
  const address = (req: Request) => ipKeyGenerator(req.ip ?? '');
  const perAccount = throttle(
    'login-account',
    limit,
    (req) =>
      `${address(req)}|${String(req.body?.email ?? '')
        .trim()
        .toLowerCase()}`,
  );
  const perClient = throttle('login-address', perAddress, address);

  router.get('/login', (req, res) => {
    if (req.user) return res.redirect(303, safeNext(req.query.next));
    loginPage(res, 200, { next: safeNext(req.query.next) });
  });

  router.post('/login', perClient, perAccount, async (req: Request, res: Response, next: NextFunction) => {
    const email = String(req.body?.email ?? '');
    const user = await services.users.verify(email, String(req.body?.password ?? ''));
    if (!user) return loginPage(res, 401, { email, error: messages.badLogin, next: safeNext(req.body?.next) });
    // The zone the browser reports (public/login.js) is kept once; later sign-ins never change it (the account page does).
    const timeZone = canonicalTimeZone(req.body?.time_zone);
    if (!user.time_zone && timeZone) await services.users.setTimeZoneIfUnset(user.id, timeZone);
    await services.users.recordSignIn(user.id);
    signInAs(services, req, res, next, user, safeNext(req.body?.next));
  });

  router.post('/logout', (req, res, next) => {
    req.session.destroy((err) => {
      if (err) return next(err);
      res.clearCookie(SESSION_COOKIE);
      res.redirect(303, '/login');
    });
  });

  return router;
}

export const SESSION_COOKIE = 'scribe.sid';
