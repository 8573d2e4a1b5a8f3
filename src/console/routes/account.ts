import { Router } from 'express';
import { rateLimit } from 'express-rate-limit';
import type { Services } from '../../services.js';
import { ValidationError } from '../../http/errors.js';
import { canonicalTimeZone, timeZoneChoices } from '../../lib/time-zones.js';
import { LOGIN_ATTEMPTS, userActor } from '../auth.js';
import { action, flash } from '../forms.js';
import { render } from '../views.js';

export const messages = {
  invalidTimeZone: 'Time zone must be an IANA time zone, such as Europe/Zurich or UTC',
  timeZoneSaved: (zone: string) => `Times are now shown in ${zone}.`,
  passwordSaved: 'Password changed: use the new one from your next sign-in. Your other sessions are signed out.',
  passwordThrottled: 'Too many password changes. Wait a few minutes and try again.',
};

/** The signed-in user's own page: who they are, the zone the console writes times in, and their password. Any role may change their own. */
export function accountRoutes(services: Services): Router {
  const router = Router();

  router.get('/account', (req, res) => {
    const zones = timeZoneChoices();
    // A stored zone that no longer names one reads as none: times are in UTC.
    const current = canonicalTimeZone(req.user!.time_zone) ?? null;
    // A zone kept from sign-in may be an alias the list does not name (Asia/Calcutta): it is offered too.
    if (current && !zones.includes(current)) zones.unshift(current);
    render(res, 'account/show', { title: 'Your account', zones, current });
  });

  router.post(
    '/account/time-zone',
    action(
      async (req) => {
        const zone = canonicalTimeZone(String(req.body.time_zone ?? '').trim());
        if (!zone) throw new ValidationError(messages.invalidTimeZone);
        await services.users.setTimeZone(req.user!.id, zone);
        await services.audit.record(userActor(req), 'user.time_zone', { type: 'user', id: req.user!.id }, zone);
        flash(req, 'notice', messages.timeZoneSaved(zone));
        return '/account';
      },
      () => '/account',
    ),
  );

  // Each try checks the current password: a session left open must not become a way to guess it.
  const passwordTries = rateLimit({
    store: services.rateLimitStore('password-change'),
    windowMs: LOGIN_ATTEMPTS.windowMs,
    limit: LOGIN_ATTEMPTS.limit,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    keyGenerator: (req) => req.user!.id,
    handler: (req, res) => {
      flash(req, 'error', messages.passwordThrottled);
      res.redirect(303, '/account');
    },
  });

  router.post(
    '/account/password',
    passwordTries,
    action(
      async (req) => {
        // This session stays signed in; the user's others end.
        req.session.signedInAt = await services.users.changePassword(req.user!, {
          current: String(req.body.current_password ?? ''),
          password: String(req.body.password ?? ''),
          confirmation: String(req.body.confirmation ?? ''),
        });
        flash(req, 'notice', messages.passwordSaved);
        return '/account';
      },
      () => '/account',
    ),
  );

  return router;
}
