import { Router } from 'express';
import type { Services } from '../../services.js';
import { ValidationError } from '../../http/errors.js';
import { canonicalTimeZone, timeZoneChoices } from '../../lib/time-zones.js';
import { userActor } from '../auth.js';
import { action, flash } from '../forms.js';

export const messages = {
  invalidTimeZone: 'Time zone must be an IANA time zone, such as Europe/Zurich or UTC',
  timeZoneSaved: (zone: string) => `Times are now shown in ${zone}.`,
  passwordSaved: 'Password changed: use the new one from your next sign-in.',
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
    res.render('account/show', { title: 'Your account', zones, current });
  });

  router.post(
    '/account/time-zone',
    action(async (req) => {
      const zone = canonicalTimeZone(String(req.body.time_zone ?? '').trim());
      if (!zone) throw new ValidationError(messages.invalidTimeZone);
      await services.users.setTimeZone(req.user!.id, zone);
      await services.audit.record(userActor(req), 'user.time_zone', { type: 'user', id: req.user!.id }, zone);
      flash(req, 'notice', messages.timeZoneSaved(zone));
      return '/account';
    }, () => '/account'),
  );

  router.post(
    '/account/password',
    action(async (req) => {
      await services.users.changePassword(req.user!, {
        current: String(req.body.current_password ?? ''),
        password: String(req.body.password ?? ''),
        confirmation: String(req.body.confirmation ?? ''),
      });
      flash(req, 'notice', messages.passwordSaved);
      return '/account';
    }, () => '/account'),
  );

  return router;
}
