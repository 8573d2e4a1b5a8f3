import { Router } from 'express';
import type { Services } from '../../services.js';
import { MAX_FILTER_TEXT } from './filters.js';
import { render, type Views } from '../views.js';
import { withQuery } from '../view-helpers.js';
import { SESSION_SEARCH_WINDOW } from '../queries.js';
import type { EntryTypeWithFields } from '../../entries/entry-type-service.js';
import { primaryOf } from './entries.js';

/** How many of each kind the results page lists; the lists it links to have the rest. */
const SHOWN = 10;
/** Longer text is not a title anyone typed: refused rather than cut, as the lists' filters cut it. */
const MAX_QUERY = MAX_FILTER_TEXT;

export const messages = {
  tooLong: `Search for at most ${MAX_QUERY} characters`,
  nothing: (q: string) => `Nothing has the id or slug "${q}", and no receipt or task title, scribe name, entry's primary field or session message contains it.`,
};

/**
 * The header's search box: an id (receipt, task, session, entry, schedule, channel,
 * webhook) or a scribe's slug goes straight to its page; other text lists the receipts,
 * tasks and scribes whose titles or names contain it, the entries whose primary field
 * contains it (by type), and the sessions with a message that contains it.
 */
export function searchRoutes(services: Services): Router {
  const router = Router();

  router.get('/search', async (req, res) => {
    const org = req.user!.organization_id;
    const q = typeof req.query.q === 'string' ? req.query.q.trim() : '';
    const show = (fields: Partial<Views['search/index']>, status?: number) =>
      render(
        res,
        'search/index',
        {
          title: q ? `Search: ${q}` : 'Search',
          q,
          receipts: [],
          tasks: [],
          scribes: [],
          entries: [],
          sessions: [],
          searchWindow: SESSION_SEARCH_WINDOW,
          error: null,
          nothing: messages.nothing(q),
          ...fields,
        },
        status,
      );
    if (!q) return show({});
    if (q.length > MAX_QUERY) return show({ error: messages.tooLong }, 400);
    const page = await services.consoleReads.pageNamedBy(org, q);
    if (page) return res.redirect(303, page);
    const [receipts, tasks, scribes, entries, sessions] = await Promise.all([
      services.consoleReads.listReceipts(org, { q, limit: SHOWN, countTotal: false }),
      services.consoleReads.listTasks(org, { q, limit: SHOWN, countTotal: false }),
      services.consoleReads.scribesMatching(org, q, SHOWN),
      services.entries.findByPrimary(org, q, SHOWN),
      services.consoleReads.listSessions(org, { text: q, limit: SHOWN, countTotal: false }),
    ]);
    show({
      receipts: receipts.items,
      moreReceipts: receipts.older !== null,
      tasks: tasks.items,
      moreTasks: tasks.older !== null,
      scribes,
      entries: entries.map((found) => ({ ...found, primary: primaryOf(found.type), seeAll: found.more ? searchOfType(found.type, q) : null })),
      sessions: sessions.items,
      moreSessions: sessions.older !== null,
    });
  });

  return router;
}

/**
 * The type's list searched for the same entries (`"<primary>":"<text>"`, drafts and archived
 * included); null when the search language cannot say it, as it quotes no double quote.
 */
function searchOfType(type: EntryTypeWithFields, text: string): string | null {
  const primary = primaryOf(type);
  if (text.includes('"') || primary.includes('"')) return null;
  return `/entry-types/${type.id}${withQuery({ q: `"${primary}":"${text}"`, drafts: 1, archived: 1 })}`;
}
