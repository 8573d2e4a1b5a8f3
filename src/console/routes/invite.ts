import { Router, type Response } from 'express';
import type { Services } from '../../services.js';
import { HttpError } from '../../http/errors.js';
import type { PasswordLinkPurpose } from '../../users/service.js';
import { signInAs } from '../auth.js';
import { render } from '../views.js';

/**
 * The one-time links of invitations and password resets, `/invite/<token>`: a form that sets
 * the password and signs the user in. Open to signed-out visitors; the token is the key.
 */
export function inviteRoutes(services: Services): Router {
  const router = Router();

  const form = (res: Response, status: number, locals: { purpose: PasswordLinkPurpose; email: string; token: string; error?: string }) => {
    // The page's address holds the token: kept out of caches (console/index.ts) and, by the Referrer-Policy, out of other sites' logs.
    render(res, 'invite/show', { title: locals.purpose === 'invite' ? 'Welcome to Scribe' : 'Set a new password', error: null, ...locals }, status);
  };
  const refused = (res: Response, err: unknown) => {
    if (!(err instanceof HttpError) || err.status !== 410) throw err;
    render(res, 'error', { title: 'This link cannot be used', message: err.message, status: 410 }, 410);
  };

  router.get('/invite/:token', async (req, res) => {
    const token = String(req.params.token);
    try {
      const { purpose, user } = await services.users.openLink(token);
      form(res, 200, { purpose, email: user.email, token });
    } catch (err) {
      refused(res, err);
    }
  });

  router.post('/invite/:token', async (req, res, next) => {
    const token = String(req.params.token);
    let link;
    try {
      link = await services.users.openLink(token);
    } catch (err) {
      return refused(res, err);
    }
    try {
      const user = await services.users.acceptLink(token, { password: String(req.body?.password ?? ''), confirmation: String(req.body?.confirmation ?? '') });
      signInAs(services, req, res, next, user, '/');
    } catch (err) {
      if (err instanceof HttpError && err.status === 422) return form(res, 422, { purpose: link.purpose, email: link.user.email, token, error: err.message });
      refused(res, err);
    }
  });

  return router;
}
