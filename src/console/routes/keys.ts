import { Router, type Request, type Response } from 'express';
import type { Services } from '../../services.js';
import { requireAdmin, userActor } from '../auth.js';
import { action, flash, rememberSent, sentAgain, sentAlready } from '../forms.js';
import { render, type Views } from '../views.js';
import { HttpError } from '../../http/errors.js';

/** API keys: list, create (the key shown once, in the response to the form) and revoke. */
export function keyRoutes(services: Services): Router {
  const router = Router();

  /** The keys page: with the key just made, or with a refused name and why. */
  const page = async (req: Request, res: Response, shown: Pick<Views['keys/index'], 'created' | 'error' | 'name'>, status = 200) =>
    render(res, 'keys/index', { title: 'API keys', keys: await services.organizations.listApiKeys(req.user!.organization_id), ...shown }, status);

  router.get('/keys', (req, res) => page(req, res, { created: null, error: null, name: '' }));

  // Rendered, not redirected: the key is shown in this response only and stored nowhere in clear.
  router.post('/keys', requireAdmin, sentAlready(sentAgain.key), async (req, res) => {
    const name = String(req.body.name ?? '').trim();
    try {
      const created = await services.organizations.createApiKey({ organizationId: req.user!.organization_id, name });
      await services.audit.record(userActor(req), 'key.create', { type: 'api_key', id: created.id }, name || 'API key');
      rememberSent(req, res, '/keys');
      await page(req, res, { created, error: null, name: '' });
    } catch (err) {
      if (!(err instanceof HttpError) || err.status !== 422) throw err;
      await page(req, res, { created: null, error: err.message, name }, 422);
    }
  });

  router.post(
    '/keys/:id/revoke',
    requireAdmin,
    action(
      async (req) => {
        const id = String(req.params.id);
        await services.organizations.revokeApiKey(id, req.user!.organization_id);
        await services.audit.record(userActor(req), 'key.revoke', { type: 'api_key', id });
        flash(req, 'notice', 'Key revoked: calls with it now answer 401.');
        return '/keys';
      },
      () => '/keys',
    ),
  );

  return router;
}
