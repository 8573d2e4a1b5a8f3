import { Router, type RequestHandler } from 'express';
import { callerOf } from '../http/api-key-auth.js';
import { BadRequestError } from '../http/errors.js';
import { parseFlag, parsePageLimit } from '../http/query-params.js';
import type { EntryTypeService } from './entry-type-service.js';
import type { EntryService } from './entry-service.js';
import { messages as searchMessages } from './search/compile.js';

export const ENTRY_LIST_LIMIT = { fallback: 100, max: 1000 };

/**
 * Entry reads, answered in form B: `{data, meta, error}`. Checks run top to bottom in the
 * documented order (docs/api.md): key → entry or entry type (404) → query (400).
 */
export function entryRoutes({ auth, entryTypes, entries }: { auth: RequestHandler[]; entryTypes: EntryTypeService; entries: EntryService }) {
  const router = Router();

  router.get('/entries/:id', ...auth, async (req, res) => {
    res.json({ data: await entries.get(callerOf(req).organizationId, String(req.params.id)), meta: {}, error: null });
  });

  router.get('/entry_types/:entry_type_id/entries', ...auth, async (req, res) => {
    const type = await entryTypes.get(callerOf(req).organizationId, String(req.params.entry_type_id));
    const limit = parsePageLimit(req.query.limit, ENTRY_LIST_LIMIT);
    const includeDrafts = parseFlag(req.query.include_drafts, 'include_drafts');
    const includeArchived = parseFlag(req.query.include_archived, 'include_archived');
    const { q } = req.query;
    if (q !== undefined && typeof q !== 'string') throw new BadRequestError(searchMessages.invalidQuery('q is given more than once'));
    // A client that hangs up stops its read: nobody is left to answer.
    const gone = new AbortController();
    res.once('close', () => gone.abort());
    const page = await entries.listJson(type, { limit, after: req.query.after, q, includeDrafts, includeArchived }, gone.signal);
    // The entries come as JSON text from the database (see ENTRY_JSON_SQL); sent as they are.
    const meta = JSON.stringify({ next_cursor: page.nextCursor, limit });
    res.type('json').send(`{"data":[${page.entries.join(',')}],"meta":${meta},"error":null}`);
  });

  return router;
}
