import { Router, type RequestHandler } from 'express';
import { actorOf, callerOf } from '../http/api-key-auth.js';
import { readJsonBody } from '../http/json-body.js';
import type { ScribeService } from '../scribes/service.js';
import { parseChatBody } from './schemas.js';
import type { SessionService } from './service.js';

/** Chat (spec 4.4): key → scribe (404) → body (400) → rules (422), as for task dispatch. */
export function chatRoutes({ auth, scribes, sessions }: { auth: RequestHandler[]; scribes: ScribeService; sessions: SessionService }) {
  const router = Router();

  router.post('/scribes/:scribe_id/chat', ...auth, async (req, res) => {
    const scribe = await scribes.getBySlug(callerOf(req).organizationId, String(req.params.scribe_id));
    const body = parseChatBody((await readJsonBody(req, res)) ?? {});
    const session = await sessions.start(scribe, { message: body.message ?? '', endImmediately: body.end_session_immediately ?? false }, actorOf(req));
    res.status(202).json({ session_id: session.id });
  });

  return router;
}
