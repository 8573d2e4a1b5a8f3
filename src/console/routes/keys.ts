import { Router } from 'express';
import type { Services } from '../../services.js';
import { requireAdmin, userActor } from '../auth.js';
import { action, flash } from '../forms.js';
import { render } from '../views.js';
import { HttpError } from '../../http/errors.js';

/** API keys: list, create (the key shown once, in the response to the form) and revoke. */
export function keyRoutes(services: Services): Router {
  const router = Router();

  router.get('/keys', async (req, res) => {
    render(res, 'keys/index', { title: 'API keys', keys: await services.organizations.listApiKeys(req.user!.organization_id), created: null, error: null, name: '' });
  });

  // Rendered, not redirected: the key is shown in this response only and stored nowhere in clear.
  router.post('/keys', requireAdmin, async (req, res) => {
    const org = req.user!.organization_id;
    const name = String(req.body.name ?? '').trim();
    const created = await services.organizations.createApiKey({ organizationId: org, name }).catch((err: unknown) => {
      if (!(err instanceof HttpError) || err.status !== 422) throw err;
      return err;
    });
    if (created instanceof HttpError) {
      render(res, 'keys/index', { title: 'API keys', keys: await services.organizations.listApiKeys(org), created: null, error: created.message, name }, 422);
      return;
    }
    await services.audit.record(userActor(req), 'key.create', { type: 'api_key', id: created.id }, name || 'API key');
    res.set('Cache-Control', 'no-store');
    render(res, 'keys/index', { title: 'API keys', keys: await services.organizations.listApiKeys(org), created, error: null, name: '' });
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
