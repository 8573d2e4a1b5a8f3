import { Router } from 'express';
import type { Services } from '../../services.js';

const PAGE = 50;

/** The audit log, newest first, paged by event id. */
export function auditRoutes(services: Services): Router {
  const router = Router();

  router.get('/audit', async (req, res) => {
    const before = /^\d{1,15}$/.test(String(req.query.before)) ? Number(req.query.before) : undefined;
    const events = await services.audit.list(req.user!.organization_id, { before, limit: PAGE + 1 });
    const page = events.slice(0, PAGE);
    res.render('audit/index', { title: 'Audit log', events: page, next: events.length > PAGE ? page.at(-1)!.id : null });
  });

  return router;
}
