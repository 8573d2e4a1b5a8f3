import { Router, type RequestHandler } from 'express';
import { actorOf, callerOf } from '../http/api-key-auth.js';
import { readJsonBody } from '../http/json-body.js';
import type { Idempotency } from '../http/idempotency.js';
import type { ScribeService } from '../scribes/service.js';
import { parseChatBody } from './schemas.js';
import type { SessionService } from './service.js';

/** Chat: key → scribe (404) → body (400) → rules (422), as for task dispatch. */
export function chatRoutes({
  auth,
  scribes,
  sessions,
  idempotency,
}: {
  auth: RequestHandler[];
  scribes: ScribeService;
  sessions: SessionService;
  idempotency: Idempotency;
}) {
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

  return router;
}
