import { Router } from 'express';
import type { Services } from '../../services.js';
import { UUID_PATTERN } from '../../lib/ids.js';
import { SESSION_FILTERS, SESSION_SEARCH_WINDOW, type SessionFilter } from '../queries.js';
import { filtersScope, pageAt, pagerOf, timeAndIdCursor } from '../pager.js';
import { filterText, scribeFilter } from './filters.js';
import { render } from '../views.js';

const PAGE = 25;
const cursor = timeAndIdCursor((id) => UUID_PATTERN.test(id));

/** The state filter's words, by what a session in it waits for. */
const STATE_LABELS: Record<(typeof SESSION_FILTERS)[number], string> = {
  reply_due: 'owes a reply',
  queued: 'queued',
  running: 'running',
  waiting: 'answered, waiting for the user',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
};

/** The sessions list's filters, as shown in the form and as the queries take them (see receiptFilters). */
export async function sessionFilters(services: Services, organizationId: string, source: Record<string, unknown>) {
  const state = (SESSION_FILTERS as readonly string[]).includes(String(source.state)) ? String(source.state) : '';
  const q = filterText(source.q);
  const scribe = await scribeFilter(services, organizationId, source.scribe);
  const filter: SessionFilter = { scribeId: scribe.selected?.id, status: state, text: q || undefined };
  return { filters: { scribe: scribe.selected?.slug ?? '', state, q }, filter, scribes: scribe.all, selected: scribe.selected };
}

/** Chat sessions of the organization, or of one scribe (`?scribe=`), with state filters, search and paging. */
export function sessionListRoutes(services: Services): Router {
  const router = Router();

  router.get('/sessions', async (req, res) => {
    const org = req.user!.organization_id;
    const { filters, filter, scribes, selected } = await sessionFilters(services, org, req.query);
    const page = await services.consoleReads.listSessions(org, { ...filter, at: pageAt(req, cursor), limit: PAGE });
    render(res, 'sessions/index', {
      title: selected ? `Sessions of ${selected.name}` : 'Sessions',
      sessions: page.items,
      pager: pagerOf(page, { path: '/sessions', filters, codec: cursor, noun: ['session', 'sessions'], scope: filtersScope(filters) }),
      filters,
      scribes,
      selected: selected ?? null,
      states: Object.entries(STATE_LABELS),
      searchWindow: SESSION_SEARCH_WINDOW,
    });
  });

  // A scribe's sessions list under its own address too.
  router.get('/b/:slug/sessions', (req, res) => {
    res.redirect(303, `/sessions?scribe=${encodeURIComponent(String(req.params.slug))}`);
  });

  return router;
}
