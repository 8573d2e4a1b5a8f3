import { Router, type Request } from 'express';
import type { Services } from '../../services.js';
import type { Actor } from '../../audit/service.js';
import { HttpError } from '../../http/errors.js';
import { requireAdmin, userActor } from '../auth.js';
import { action, flash } from '../forms.js';
import { withQuery } from '../view-helpers.js';
import { receiptFilters } from './receipts.js';
import { taskFilters } from './tasks.js';
import { sessionFilters } from './session-list.js';
import { render } from '../views.js';

/** The most one confirmation acts on; the preview says so when more match. */
export const BULK_MAX = 500;

const KINDS = ['receipts', 'tasks', 'sessions'] as const;
type Kind = (typeof KINDS)[number];
type Act = 'retry' | 'discard';

const ACTS: Record<Act, { verb: string; done: string }> = {
  retry: { verb: 'Retry', done: 'Retried' },
  discard: { verb: 'Discard', done: 'Discarded' },
};

/**
 * What staff do to one failure of each kind (the feature services hold the rules), each
 * answering the id of the page to show next: a receipt's retry is a new receipt.
 */
function actionsOn(services: Services): Record<Kind, Record<Act, (actor: Actor, id: string) => Promise<string>>> {
  const then = (id: string) => () => id;
  return {
    receipts: { retry: (a, id) => services.requests.retry(a, id).then((made) => made.id), discard: (a, id) => services.requests.discard(a, id).then(then(id)) },
    tasks: { retry: (a, id) => services.tasks.retry(a, id).then(then(id)), discard: (a, id) => services.tasks.discard(a, id).then(then(id)) },
    sessions: { retry: (a, id) => services.sessions.retry(a, id).then(then(id)), discard: (a, id) => services.sessions.discard(a, id).then(then(id)) },
  };
}

const RETRIED: Record<Kind, string> = {
  receipts: 'Retried as a new receipt.',
  tasks: 'Retried: the task is open again for the scribe.',
  sessions: 'Retried: the scribe is answering again.',
};

/**
 * Acting on failures: retry or discard one failed receipt, task or session from its page;
 * and the same for every failure a filtered receipts, tasks or sessions list selects, after a preview
 * that counts them and a confirmation. Each item is audited by its feature's service.
 */
export function failureRoutes(services: Services): Router {
  const router = Router();
  const on = actionsOn(services);
  const pageOf = (kind: Kind, id: string) => `/${kind}/${encodeURIComponent(id)}`;

  for (const kind of KINDS) {
    for (const act of ['retry', 'discard'] as const) {
      router.post(
        `/${kind}/:id/${act}`,
        requireAdmin,
        action(
          async (req) => {
            const next = await on[kind][act](userActor(req), String(req.params.id));
            // A discard's page says so itself ("Discarded … : it no longer shows among the failures").
            if (act === 'retry') flash(req, 'notice', RETRIED[kind]);
            return pageOf(kind, next);
          },
          (req) => pageOf(kind, String(req.params.id)),
        ),
      );
    }
  }

  const filtersFor = { receipts: receiptFilters, tasks: taskFilters, sessions: sessionFilters };
  for (const kind of KINDS) {
    const filtersOf = (req: Request, source: Record<string, unknown>) => filtersFor[kind](services, req.user!.organization_id, source);

    // The preview: what the action would take, counted, with the button that confirms it.
    router.get(`/${kind}/bulk`, requireAdmin, async (req, res) => {
      const act = actOf(req.query.action);
      const { filters, filter } = await filtersOf(req, req.query);
      const upto = services.clock().toISOString();
      const { total } = await services.consoleReads.bulkSelection(req.user!.organization_id, kind, act, filter, upto, 0);
      render(res, 'failures/bulk', { title: `${ACTS[act].verb} failed ${kind}`, kind, act, verb: ACTS[act].verb, filters, upto, total, max: BULK_MAX });
    });

    router.post(
      `/${kind}/bulk`,
      requireAdmin,
      action(
        async (req) => {
          const act = actOf(req.body.action);
          const upto = typeof req.body.upto === 'string' && !Number.isNaN(Date.parse(req.body.upto)) ? new Date(req.body.upto).toISOString() : undefined;
          if (!upto) throw new HttpError(400, 'The confirmation has no preview time; open the preview again.');
          const { filters, filter } = await filtersOf(req, req.body);
          const actor = userActor(req);
          const { ids } = await services.consoleReads.bulkSelection(actor.organizationId, kind, act, filter, upto, BULK_MAX);
          const refused = new Map<string, number>();
          for (const id of ids) {
            try {
              await on[kind][act](actor, id);
            } catch (err) {
              // One that cannot be acted on (its scribe is not active, another admin got there first) does not stop the rest.
              if (!(err instanceof HttpError)) throw err;
              refused.set(err.message, (refused.get(err.message) ?? 0) + 1);
            }
          }
          flash(req, refused.size ? 'error' : 'notice', bulkOutcome(ACTS[act].done, kind, ids.length, refused));
          return `/${kind}${withQuery(filters)}`;
        },
        () => `/${kind}`,
      ),
    );
  }

  return router;
}

function actOf(value: unknown): Act {
  if (value === 'retry' || value === 'discard') return value;
  throw new HttpError(400, 'Action must be retry or discard');
}

/** `Retried 37 receipts.`, or with what was refused and why: `Retried 30 of 37 receipts; 7 not: Scribe is not active.` */
export function bulkOutcome(done: string, kind: Kind, selected: number, refused: Map<string, number>): string {
  const skipped = [...refused.values()].reduce((a, b) => a + b, 0);
  if (skipped === 0) return `${done} ${selected} ${selected === 1 ? kind.slice(0, -1) : kind}.`;
  const why = [...refused].map(([message, n]) => `${n}: ${message}`).join('; ');
  return `${done} ${selected - skipped} of ${selected} ${kind}; not ${done.toLowerCase()}: ${why}.`;
}
