import { Router, type RequestHandler } from 'express';
import { actorOf, callerOf } from '../http/api-key-auth.js';
import { readJsonBody } from '../http/json-body.js';
import type { Idempotency } from '../http/idempotency.js';
import { parsePageLimit } from '../http/query-params.js';
import type { ScribeService } from '../scribes/service.js';
import { parseListRequestsQuery, parseSubmitRequestBody } from './schemas.js';
import type { RequestService } from './service.js';

export const REQUEST_LIST_LIMIT = { fallback: 25, max: 100 };

/**
 * Task dispatch. Each handler checks in the documented order (docs/api.md), top to
 * bottom: key (middleware) → scribe or request (404) → body or query (400) → rules (422).
 */
export function requestRoutes({ auth, scribes, requests, idempotency }: { auth: RequestHandler[]; scribes: ScribeService; requests: RequestService; idempotency: Idempotency }) {
  const router = Router();

  router.post('/scribes/:scribe_id/requests', ...auth, async (req, res) => {
    const scribe = await scribes.getBySlug(callerOf(req).organizationId, String(req.params.scribe_id));
    const raw = (await readJsonBody(req, res)) ?? {};
    await idempotency.run(req, res, raw, 202, async (save) => ({
      request: await requests.submit(scribe, parseSubmitRequestBody(raw), { actor: actorOf(req), alongside: save && ((trx, receipt) => save(trx, { request: receipt })) }),
    }));
  });

  router.get('/requests/:id', ...auth, async (req, res) => {
    res.json({ request: await requests.get(callerOf(req).organizationId, String(req.params.id)) });
  });

  router.get('/scribes/:scribe_id/requests', ...auth, async (req, res) => {
    const scribe = await scribes.getBySlug(callerOf(req).organizationId, String(req.params.scribe_id));
    const filter = parseListRequestsQuery(req.query);
    const limit = parsePageLimit(req.query.limit, REQUEST_LIST_LIMIT);
    res.json(await requests.list(scribe, { status: filter.status, entityType: filter.entity_type, limit, after: req.query.after }));
  });

  return router;
}
