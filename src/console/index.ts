import express, { Router, type ErrorRequestHandler, type Request } from 'express';
import session from 'express-session';
import { csrfSync } from 'csrf-sync';
import type { Logger } from '../logger.js';
import type { Services } from '../services.js';
import { BadRequestError, HttpError } from '../http/errors.js';
import { BODY_LIMIT, refuseDeclaredTooLarge } from '../http/json-body.js';
import { PUBLIC_DIR } from '../lib/paths.js';
import { SESSION_COOKIE, authRoutes, loadUser, requireUser } from './auth.js';
import { viewHelpers } from './view-helpers.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { scribeRoutes } from './routes/scribes.js';
import { receiptRoutes } from './routes/receipts.js';
import { taskRoutes } from './routes/tasks.js';
import { sessionRoutes } from './routes/sessions.js';
import { keyRoutes } from './routes/keys.js';
import { auditRoutes } from './routes/audit.js';
import { entryRoutes } from './routes/entries.js';
import { scheduleRoutes } from './routes/schedules.js';
import { channelRoutes } from './routes/channels.js';
import { webhookRoutes } from './routes/webhooks.js';
import { searchRoutes } from './routes/search.js';
import { failureRoutes } from './routes/failures.js';
import { isLiveRefresh } from './live.js';
import { accountRoutes } from './routes/account.js';
import { inviteRoutes } from './routes/invite.js';
import { userRoutes } from './routes/users.js';
import { sessionListRoutes } from './routes/session-list.js';
import { zoneOrUtc } from '../lib/time-zones.js';
import { render, type BaseLocals } from './views.js';

/** How long a console sign-in lasts without use. */
export const SESSION_IDLE_MS = 8 * 3_600_000;

export interface ConsoleOptions {
  /** Failed sign-ins per address and email before 429 (tests lower it). */
  loginAttempts?: number;
  /** Failed sign-ins per address, whatever the email, before 429. */
  loginAttemptsPerAddress?: number;
}

/**
 * The staff console: server-rendered pages (views/), signed-in staff of one organization
 * only. Sessions live in the database (connect-session-knex), cookies are httpOnly,
 * SameSite=Lax and Secure over HTTPS; every state-changing request carries a CSRF token
 * (csrf-sync, the synchronizer token pattern).
 */
export function consoleRouter({ services, logger, sessionSecret, options = {} }: { services: Services; logger: Logger; sessionSecret: string; options?: ConsoleOptions }): Router {
  const router = Router();
  router.use(refuseDeclaredTooLarge());
  router.use('/assets', express.static(PUBLIC_DIR, { index: false, maxAge: '1h', fallthrough: false }));
  // Browsers ask for /favicon.ico on their own, pages or not.
  router.get('/favicon.ico', (_req, res) => res.redirect(301, '/assets/favicon.svg'));

  // Expired rows are pruned by the `prune-console-sessions` job, not by the store's own timer.
  const store = services.consoleSessionStore();
  router.use(
    session({
      name: SESSION_COOKIE,
      secret: sessionSecret,
      store,
      resave: false,
      saveUninitialized: false,
      rolling: true,
      cookie: { httpOnly: true, sameSite: 'lax', secure: 'auto', maxAge: SESSION_IDLE_MS },
    }),
  );
  router.use(redirectsAfterSave);
  router.use(express.urlencoded({ extended: false, limit: BODY_LIMIT }));
  router.use(refuseNul);
  const csrf = csrfSync({
    getTokenFromRequest: (req) => (typeof req.body?._csrf === 'string' ? req.body._csrf : req.get('x-csrf-token')),
    errorConfig: { statusCode: 403, message: 'The form has expired or did not come from this console. Reload the page and try again.' },
  });
  router.use(loadUser(services));
  // Locals first, so that even a refused request (CSRF) gets a whole error page.
  router.use((req, res, next) => {
    // A live page's background refresh (public/live.js) shows no message and leaves it for
    // the page being loaded: in flight while a form is sent, it would take that form's flash.
    const refresh = isLiveRefresh(req);
    Object.assign(res.locals, baseLocals(req), {
      user: req.user ?? null,
      csrfToken: csrf.generateToken(req),
      flash: refresh ? null : (req.session.flash ?? null),
      // Every time on the page is written in the reader's zone, relative to the services' clock.
      timeZone: zoneOrUtc(req.user?.time_zone),
      now: services.clock().getTime(),
    } satisfies Partial<BaseLocals>);
    if (!refresh) delete req.session.flash;
    // No page of the console is kept by the browser or a cache on the way: each shows an
    // organization's data (or a secret, or a link's token), and Back after Sign out would show it again.
    res.set('Cache-Control', 'no-store');
    next();
  });
  router.use(csrf.csrfSynchronisedProtection);

  router.use(authRoutes(services, { limit: options.loginAttempts, perAddress: options.loginAttemptsPerAddress }));
  router.use(inviteRoutes(services));
  router.use(requireUser);
  router.use(dashboardRoutes(services));
  router.use(scribeRoutes(services));
  // Before the lists: /receipts/bulk is not a receipt's page.
  router.use(failureRoutes(services));
  router.use(receiptRoutes(services));
  router.use(taskRoutes(services));
  router.use(sessionListRoutes(services));
  router.use(sessionRoutes(services));
  router.use(entryRoutes(services));
  router.use(scheduleRoutes(services));
  router.use(channelRoutes(services));
  router.use(webhookRoutes(services));
  router.use(keyRoutes(services));
  router.use(userRoutes(services));
  router.use(auditRoutes(services));
  router.use(searchRoutes(services));
  router.use(accountRoutes(services));
  router.use((_req, _res, next) => next(new HttpError(404, 'There is nothing at this address.')));
  router.use(errorPage(logger));
  return router;
}

/** What every view reads, with the values of a page seen signed out. */
function baseLocals(req: Request): BaseLocals {
  return { h: viewHelpers, user: null, path: req.path, csrfToken: '', flash: null, live: false, timeZone: 'UTC', now: Date.now() };
}

/** Errors as pages: what staff can act on is said; anything else is logged and shown as a plain 500. */
function errorPage(logger: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    // A known error's own status (a 503 "Search timed out" among them); anything else is ours.
    const status = err instanceof HttpError || (typeof err?.status === 'number' && err.status >= 400 && err.status < 500) ? err.status : 500;
    if (status === 500) logger.error({ err, requestId: req.id }, 'console request failed');
    const text = status === 500 ? 'Something went wrong on our side. It has been logged.' : String(err.message);
    const title = status === 404 ? 'Not found' : status === 403 ? 'Not allowed' : status === 500 ? 'Server error' : 'Cannot do that';
    // Errors raised before the locals were set (a missing asset) still get a whole page.
    res.locals = { ...baseLocals(req), ...res.locals };
    render(res, 'error', { title, message: text, status }, status);
  };
}

/**
 * Redirects wait for the session to be stored. express-session writes a response's status and
 * headers before its save at the end has finished, so a browser following a redirect could
 * read the session without what this request wrote: the message a form left (flash), or the
 * sign-in itself. (Once saved, express-session does not save it again at the end.)
 */
const redirectsAfterSave: express.RequestHandler = (req, res, next) => {
  const redirect = res.redirect.bind(res) as (...args: unknown[]) => void;
  // A destroyed session (signing out) has nothing to store.
  res.redirect = ((...args: unknown[]) => (req.session ? req.session.save((err) => (err ? next(err) : redirect(...args))) : redirect(...args))) as typeof res.redirect;
  next();
};

/** 400 for a form field or query value holding U+0000, which no database column can store (PostgreSQL refuses it). */
const refuseNul: express.RequestHandler = (req, _res, next) => {
  const values = [...Object.values((req.body as Record<string, unknown> | undefined) ?? {}), ...Object.values(req.query)];
  next(values.some((value) => typeof value === 'string' && value.includes('\0')) ? new BadRequestError('Form fields must not contain U+0000') : undefined);
};
