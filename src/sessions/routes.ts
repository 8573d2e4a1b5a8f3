import { Router, type RequestHandler } from 'express';
import { actorOf, callerOf } from '../http/api-key-auth.js';
import { readJsonBody } from '../http/json-body.js';
import type { Idempotency } from '../http/idempotency.js';
import type { ScribeService } from '../scribes/service.js';
import { parseChatBody, parseTextBody } from './schemas.js';
import type { SessionService } from './service.js';

/**
 * Chat and conversations: key → scribe or session (404) → body (400) → rules (422) → state
 * (409), as for task dispatch.
 */
export function chatRoutes({ auth, scribes, sessions, idempotency }: { auth: RequestHandler[]; scribes: ScribeService; sessions: SessionService; idempotency: Idempotency }) {
  const router = Router();

  router.post('/scribes/:scribe_id/chat', ...auth, async (req, res) => {
    const scribe = await scribes.getBySlug(callerOf(req).organizationId, String(req.params.scribe_id));
    const raw = (await readJsonBody(req, res)) ?? {};
    await idempotency.run(req, res, raw, 202, async (save) => {
      const body = parseChatBody(raw);
      const session = await sessions.start(scribe, { message: body.message ?? '', endImmediately: body.end_session_immediately ?? false }, actorOf(req), save);
      return { session_id: session.id };
    });
  });

  router.get('/sessions/:id', ...auth, async (req, res) => {
    res.json({ session: await sessions.read(callerOf(req).organizationId, String(req.params.id)) });
  });

  router.post('/sessions/:id/messages', ...auth, async (req, res) => {
    const id = String(req.params.id);
    await sessions.get(callerOf(req).organizationId, id);
    const raw = (await readJsonBody(req, res)) ?? {};
    await idempotency.run(req, res, raw, 202, async (save) => ({ session: await sessions.addMessage(actorOf(req), id, parseTextBody(raw, 'message'), save) }));
  });

  router.post('/sessions/:id/cancel', ...auth, async (req, res) => {
    const id = String(req.params.id);
    await sessions.get(callerOf(req).organizationId, id);
    const raw = (await readJsonBody(req, res)) ?? {};
    await idempotency.run(req, res, raw, 200, async (save) => ({ session: await sessions.cancel(actorOf(req), id, save) }));
  });

  return router;
}
