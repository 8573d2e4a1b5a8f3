import { Router, type Request, type RequestHandler } from 'express';
import { z } from 'zod';
import { actorOf, callerOf } from '../http/api-key-auth.js';
import { BadRequestError } from '../http/errors.js';
import { readJsonBody } from '../http/json-body.js';
import type { Idempotency, SaveResponse } from '../http/idempotency.js';
import { parsePageLimit } from '../http/query-params.js';
import { REQUEST_LIST_LIMIT } from '../requests/routes.js';
import type { ScribeService } from '../scribes/service.js';
import { parseTextBody } from '../sessions/schemas.js';
import { messages as requestMessages } from '../requests/schemas.js';
import { TASK_STATUSES } from './queries.js';
import type { TaskService } from './service.js';
import type { ApiTask } from './api.js';

// As for receipts: 400 `Invalid status` for a status that is not a task's, empty, or given twice.
const listQuery = z.object({ status: z.enum(TASK_STATUSES, { error: requestMessages.invalidStatus }).optional() });

/**
 * Tasks over the API: read one or a scribe's page, answer a waiting one, cancel one. Checked
 * in order: key → scribe or task (404) → body or query (400) → rules (422) → state (409).
 */
export function taskRoutes({ auth, scribes, tasks, idempotency }: { auth: RequestHandler[]; scribes: ScribeService; tasks: TaskService; idempotency: Idempotency }) {
  const router = Router();

  router.get('/tasks/:id', ...auth, async (req, res) => {
    res.json({ task: await tasks.read(callerOf(req).organizationId, String(req.params.id)) });
  });

  router.get('/scribes/:scribe_id/tasks', ...auth, async (req, res) => {
    const scribe = await scribes.getBySlug(callerOf(req).organizationId, String(req.params.scribe_id));
    const filter = listQuery.safeParse(req.query);
    if (!filter.success) throw new BadRequestError(filter.error.issues[0]!.message);
    const limit = parsePageLimit(req.query.limit, REQUEST_LIST_LIMIT);
    res.json(await tasks.page(scribe, { status: filter.data.status, limit, after: req.query.after }));
  });

  /** A change to one task: 404 before the body is read, then `change`, answered with the task as the change left it. */
  const taskChange =
    (status: number, change: (req: Request, id: string, raw: unknown, save: SaveResponse | undefined) => Promise<ApiTask>): RequestHandler =>
    async (req, res) => {
      const id = String(req.params.id);
      await tasks.get(callerOf(req).organizationId, id);
      const raw = (await readJsonBody(req, res)) ?? {};
      await idempotency.run(req, res, raw, status, async (save) => ({ task: await change(req, id, raw, save) }));
    };

  router.post(
    '/tasks/:id/input',
    ...auth,
    taskChange(202, (req, id, raw, save) => tasks.giveInput(actorOf(req), id, parseTextBody(raw, 'input'), save)),
  );
  router.post(
    '/tasks/:id/cancel',
    ...auth,
    taskChange(200, (req, id, _raw, save) => tasks.cancel(actorOf(req), id, save)),
  );

  return router;
}
