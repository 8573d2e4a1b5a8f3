import { Router, type Request, type Response } from 'express';
import type { Services } from '../../services.js';
import { HttpError } from '../../http/errors.js';
import { USER_ROLES, userState } from '../../users/service.js';
import { requireAdmin, userActor } from '../auth.js';
import { action, flash, rememberSent, sentAgain, sentAlready } from '../forms.js';
import { render } from '../views.js';

/** A link shown once on the page that made it. */
interface ShownLink {
  kind: 'invite' | 'reset';
  email: string;
  url: string;
}

/**
 * Staff accounts, for admins only (the page and every action): invite, change role, disable
 * and enable, delete, and a reset link. Invitation and reset links are shown once, in the
 * response to the form, and stored nowhere in clear.
 */
export function userRoutes(services: Services): Router {
  const router = Router();
  router.use('/users', requireAdmin);

  const page = async (req: Request, res: Response, shown: ShownLink | null, status = 200, form = { email: '', role: 'viewer' }) => {
    const users = (await services.users.list(req.user!.organization_id)).map((u) => ({ ...u, state: userState(u) }));
    render(res, 'users/index', { title: 'Users', users, roles: USER_ROLES, shown, form }, status);
  };

  router.get('/users', (req, res) => page(req, res, null));

  /** Makes a link and shows it on the page, or the refusal (422) with the form as typed. */
  const showLink = async (req: Request, res: Response, make: () => Promise<ShownLink>, form?: { email: string; role: string }) => {
    let shown: ShownLink;
    try {
      shown = await make();
    } catch (err) {
      if (!(err instanceof HttpError) || err.status !== 422) throw err;
      res.locals.flash = { kind: 'error', text: err.message };
      return page(req, res, null, 422, form);
    }
    rememberSent(req, res, '/users');
    await page(req, res, shown);
  };

  // Rendered, not redirected: the link is shown in this response only.
  const repeat = sentAlready(sentAgain.link);
  router.post('/users', repeat, (req, res) => {
    const form = { email: String(req.body.email ?? '').trim(), role: String(req.body.role ?? 'viewer') };
    return showLink(
      req,
      res,
      async () => {
        const invited = await services.users.invite(userActor(req), form);
        return { kind: 'invite', email: invited.email, url: invited.url };
      },
      form,
    );
  });

  router.post('/users/:id/reset', repeat, (req, res) =>
    showLink(req, res, async () => {
      const { user, url } = await services.users.reset(userActor(req), String(req.params.id));
      return { kind: 'reset', email: user.email, url };
    }),
  );

  const change = (run: (req: Request) => Promise<string>) =>
    action(
      async (req) => {
        flash(req, 'notice', await run(req));
        return '/users';
      },
      () => '/users',
    );

  router.post(
    '/users/:id/role',
    change(async (req) => {
      const user = await services.users.setRole(userActor(req), String(req.params.id), String(req.body.role ?? ''));
      return `${user.email} is now ${user.role === 'admin' ? 'an admin' : 'a viewer'}.`;
    }),
  );
  router.post(
    '/users/:id/disable',
    change(async (req) => `${(await services.users.setDisabled(userActor(req), String(req.params.id), true)).email} is disabled and signed out.`),
  );
  router.post(
    '/users/:id/enable',
    change(async (req) => `${(await services.users.setDisabled(userActor(req), String(req.params.id), false)).email} may sign in again.`),
  );
  router.post(
    '/users/:id/delete',
    change(async (req) => {
      const user = await services.users.remove(userActor(req), String(req.params.id));
      return `${user.email} was deleted.`;
    }),
  );

  return router;
}
