import { Router } from 'express';
import type { Services } from '../../services.js';
import { MAX_FILTER_TEXT } from './filters.js';
import { render, type Views } from '../views.js';

/** How many of each kind the results page lists; the lists it links to have the rest. */
const SHOWN = 10;
/** Longer text is not a title anyone typed: refused rather than cut, as the lists' filters cut it. */
const MAX_QUERY = MAX_FILTER_TEXT;

export const messages = {
  tooLong: `Search for at most ${MAX_QUERY} characters`,
  nothing: (q: string) => `Nothing has the id or slug "${q}", and no receipt, task or scribe has it in its title or name.`,
};

/**
 * The header's search box: an id (receipt, task, session, entry, schedule, channel,
 * webhook) or a scribe's slug goes straight to its page; other text lists the receipts,
 * tasks and scribes whose titles or names contain it.
 */
export function searchRoutes(services: Services): Router {
  const router = Router();

  router.get('/search', async (req, res) => {
    const org = req.user!.organization_id;
    const q = typeof req.query.q === 'string' ? req.query.q.trim() : '';
    const show = (fields: Partial<Views['search/index']>, status?: number) =>
      render(res, 'search/index', { title: q ? `Search: ${q}` : 'Search', q, receipts: [], tasks: [], scribes: [], error: null, nothing: messages.nothing(q), ...fields }, status);
    if (!q) return show({});
    if (q.length > MAX_QUERY) return show({ error: messages.tooLong }, 400);
    const page = await services.consoleReads.pageNamedBy(org, q);
    if (page) return res.redirect(303, page);
    const [receipts, tasks, scribes] = await Promise.all([
      services.consoleReads.listReceipts(org, { q, limit: SHOWN, countTotal: false }),
      services.consoleReads.listTasks(org, { q, limit: SHOWN, countTotal: false }),
      services.consoleReads.scribesMatching(org, q, SHOWN),
    ]);
    show({ receipts: receipts.items, moreReceipts: receipts.older !== null, tasks: tasks.items, moreTasks: tasks.older !== null, scribes });
  });

  return router;
}
