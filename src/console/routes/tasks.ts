import { Router } from 'express';
import type { Services } from '../../services.js';
import { filtersScope, pageAt, pagerOf, timeAndIdCursor } from '../pager.js';
import { UUID_PATTERN } from '../../lib/ids.js';
import { requireAdmin, userActor } from '../auth.js';
import { action, flash } from '../forms.js';
import { filterText, scribeFilter } from './filters.js';
import { TASK_FILTER_STATUSES, type TaskFilter } from '../queries.js';
import { traceTotals } from '../../agents/trace.js';
import { writingEvery } from '../live.js';
import { render } from '../views.js';

const PAGE = 25;
const cursor = timeAndIdCursor((id) => UUID_PATTERN.test(id));

/** Tasks of the organization, and each task's page with its history; staff answer waiting tasks. */
export function taskRoutes(services: Services): Router {
  const router = Router();
  const pageOf = (id: string) => `/tasks/${encodeURIComponent(id)}`;

  router.get('/tasks', async (req, res) => {
    const org = req.user!.organization_id;
    const { filters, filter, scribes } = await taskFilters(services, org, req.query);
    const page = await services.consoleReads.listTasks(org, { ...filter, at: pageAt(req, cursor), limit: PAGE });
    render(res, 'tasks/index', {
      title: 'Tasks',
      tasks: page.items,
      pager: pagerOf(page, { path: '/tasks', filters, codec: cursor, noun: ['task', 'tasks'], scope: filtersScope(filters) }),
      filters,
      scribes,
      statuses: TASK_FILTER_STATUSES,
    });
  });

  router.get('/tasks/:id', async (req, res) => {
    const task = await services.tasks.get(req.user!.organization_id, String(req.params.id));
    const scribe = (await services.scribes.find(task.scribe_id))!;
    const calls = await services.traces.of({ taskId: task.id });
    render(res, 'tasks/show', {
      title: task.title,
      task,
      scribe,
      calls,
      totals: traceTotals(calls),
      live: task.status === 'open' || task.status === 'in_progress',
      liveEveryMs: writingEvery(task.events),
    });
  });

  router.post(
    '/tasks/:id/input',
    requireAdmin,
    action(
      async (req) => {
        await services.tasks.giveInput(userActor(req), String(req.params.id), String(req.body.text ?? ''));
        flash(req, 'notice', 'Input given; the task is open again.');
        return pageOf(String(req.params.id));
      },
      (req) => pageOf(String(req.params.id)),
      { form: 'task-input' },
    ),
  );

  router.post(
    '/tasks/:id/cancel',
    requireAdmin,
    action(
      async (req) => {
        await services.tasks.cancel(userActor(req), String(req.params.id));
        flash(req, 'notice', 'Task cancelled.');
        return pageOf(String(req.params.id));
      },
      (req) => pageOf(String(req.params.id)),
    ),
  );

  return router;
}

/** The tasks list's filters, as shown in the form and as the queries take them (see receiptFilters). */
export async function taskFilters(services: Services, organizationId: string, source: Record<string, unknown>) {
  const status = (TASK_FILTER_STATUSES as readonly string[]).includes(String(source.status)) ? String(source.status) : '';
  const q = filterText(source.q);
  const scribe = await scribeFilter(services, organizationId, source.scribe);
  const filter: TaskFilter = { scribeId: scribe.selected?.id, status, q };
  return { filters: { scribe: scribe.selected?.slug ?? '', status, q }, filter, scribes: scribe.all };
}
