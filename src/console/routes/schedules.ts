import { Router, type Request, type Response } from 'express';
import type { Services } from '../../services.js';
import { HttpError } from '../../http/errors.js';
import type { ScheduleInput } from '../../schedules/service.js';
import { OVERLAP_POLICIES } from '../../schedules/queries.js';
import { requireAdmin, userActor } from '../auth.js';
import { action, flash } from '../forms.js';
import { pageAt, pagerOf, timeAndIdCursor } from '../pager.js';
import { UUID_PATTERN } from '../../lib/ids.js';
import { render } from '../views.js';

/** How many fire times ahead the console shows. */
const PREVIEW_FIRES = 5;
/** How many fires a page of a schedule's list shows. */
const FIRES_PAGE = 50;
const cursor = timeAndIdCursor((id) => UUID_PATTERN.test(id));

/** The form's fields as the service takes them; everything staff typed comes back on a refusal. */
function scheduleInput(body: Record<string, unknown>): ScheduleInput & { timezone: string; overlap: string } {
  const text = (name: string) => String(body[name] ?? '');
  return {
    cron: text('cron'),
    timezone: text('timezone').trim() || 'UTC',
    overlap: text('overlap') || 'skip',
    summary: text('summary'),
    title: text('title').trim() || null,
    acceptance_criteria: text('acceptance_criteria').trim() || null,
  };
}

/**
 * Schedules: the organization's list, a scribe's new-schedule form, and each schedule's page
 * (its expression in words, its next fire times in its zone, its fires) with the admin
 * actions: edit, pause, resume, run now, delete.
 */
export function scheduleRoutes(services: Services): Router {
  const router = Router();
  const pageOf = (id: string) => `/schedules/${encodeURIComponent(id)}`;

  /** The words and next fire times of an expression, or the reason it is refused. */
  function preview(input: { cron: string; timezone: string }) {
    try {
      return { ...services.schedules.preview(input.cron, input.timezone, PREVIEW_FIRES), error: null };
    } catch (err) {
      if (err instanceof HttpError) return { description: null, next: [], error: err.message };
      throw err;
    }
  }

  router.get('/schedules', async (req, res) => {
    const [schedules, scribes] = await Promise.all([services.schedules.list(req.user!.organization_id), services.scribes.listNames(req.user!.organization_id)]);
    render(res, 'schedules/index', { title: 'Schedules', schedules, scribes });
  });

  type FormValues = ReturnType<typeof scheduleInput>;

  /** The new-schedule or edit form for the scribe `slug`, with the preview of `values`. */
  const renderForm = async (req: Request, res: Response, slug: string, values: FormValues, extra: { error?: string; status?: number; schedule?: { id: string } } = {}) => {
    const scribe = await services.scribes.getBySlug(req.user!.organization_id, slug);
    render(
      res,
      'schedules/form',
      {
        title: extra.schedule ? 'Edit schedule' : 'New schedule',
        scribe,
        schedule: extra.schedule ?? null,
        values,
        preview: preview(values),
        error: extra.error ?? null,
        overlaps: OVERLAP_POLICIES,
      },
      extra.status ?? 200,
    );
  };

  /**
   * A posted form: "Preview" shows the words and next fire times without saving; otherwise
   * `save` runs and the schedule's page follows. A refusal renders the form again with what
   * was typed and the reason (422).
   */
  const submitForm = async (
    req: Request,
    res: Response,
    slug: string,
    schedule: { id: string } | undefined,
    save: (values: FormValues) => Promise<{ id: string }>,
    notice: string,
  ) => {
    const values = scheduleInput(req.body);
    if (req.body.preview !== undefined) return renderForm(req, res, slug, values, { schedule });
    try {
      const saved = await save(values);
      flash(req, 'notice', notice);
      res.redirect(303, pageOf(saved.id));
    } catch (err) {
      if (!(err instanceof HttpError) || err.status !== 422) throw err;
      await renderForm(req, res, slug, values, { error: err.message, status: 422, schedule });
    }
  };

  router.get('/b/:slug/schedules/new', requireAdmin, async (req, res) => {
    await renderForm(req, res, String(req.params.slug), { cron: '0 9 * * 1-5', timezone: 'UTC', overlap: 'skip', summary: '', title: null, acceptance_criteria: null });
  });

  router.post('/b/:slug/schedules', requireAdmin, async (req, res) => {
    const slug = String(req.params.slug);
    await submitForm(req, res, slug, undefined, (values) => services.schedules.create(userActor(req), slug, values), 'Schedule created.');
  });

  router.get('/schedules/:id', async (req, res) => {
    const schedule = await services.schedules.get(req.user!.organization_id, String(req.params.id));
    const page = await services.schedules.firePage(schedule.id, pageAt(req, cursor), FIRES_PAGE);
    const pager = pagerOf(page, { path: pageOf(schedule.id), filters: {}, codec: cursor, noun: ['fire', 'fires'], scope: 'of this schedule', order: 'Latest fire time first' });
    // The page lists no fire times while the schedule is paused.
    render(res, 'schedules/show', { title: schedule.title || 'Schedule', schedule, fires: page.items, pager, preview: preview(schedule) });
  });

  router.get('/schedules/:id/edit', requireAdmin, async (req, res) => {
    const schedule = await services.schedules.get(req.user!.organization_id, String(req.params.id));
    await renderForm(req, res, schedule.scribe_slug, schedule, { schedule });
  });

  router.post('/schedules/:id/edit', requireAdmin, async (req, res) => {
    const schedule = await services.schedules.get(req.user!.organization_id, String(req.params.id));
    await submitForm(req, res, schedule.scribe_slug, schedule, (values) => services.schedules.update(userActor(req), schedule.id, values), 'Schedule saved.');
  });

  const act = (name: string, run: (req: Request, id: string) => Promise<string>) =>
    router.post(
      `/schedules/:id/${name}`,
      requireAdmin,
      action(
        async (req) => {
          const id = String(req.params.id);
          flash(req, 'notice', await run(req, id));
          return name === 'delete' ? '/schedules' : pageOf(id);
        },
        (req) => pageOf(String(req.params.id)),
      ),
    );
  act('pause', async (req, id) => (await services.schedules.pause(userActor(req), id), 'Paused: it does not fire until resumed.'));
  act('resume', async (req, id) => (await services.schedules.resume(userActor(req), id), 'Resumed: it fires at its next fire time.'));
  act('run', async (req, id) => `Submitted receipt ${(await services.schedules.runNow(userActor(req), id)).request_id}.`);
  act('delete', async (req, id) => (await services.schedules.remove(userActor(req), id), 'Schedule deleted. Its receipts stay.'));

  return router;
}
