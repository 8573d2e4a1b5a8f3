import type { Db } from '../db/knex.js';
import { dialectOf } from '../db/dialect.js';
import { UUID_PATTERN } from '../lib/ids.js';
import { decodeAfter, keysetPage } from '../http/cursor.js';
import { HttpError } from '../http/errors.js';
import type { EntryTypeWithFields } from './entry-type-service.js';
import * as queries from './queries.js';
import { planPredicate, planSearch } from './search/compile.js';
import { primaryContains } from './search/resolve.js';
import { RememberedCounts } from './search/remembered-counts.js';
import { TrigramStats } from './search/text-match.js';

export const messages = {
  timedOut: 'Search timed out',
};

/** How long one page read may take, searching included (503 `Search timed out` after 5 s). */
export const READ_TIMEOUT_MS = 5000;

export class SearchTimedOutError extends HttpError {
  constructor() {
    super(503, messages.timedOut);
  }
}

export interface ListOptions {
  limit: number;
  after?: unknown;
  q?: string;
  /**
   * Instead of `q`: entries whose primary field's value contains this text, in any case (as
   * `"<primary>":"<text>"` would, for texts the language cannot quote). The console's search box.
   */
  primaryContains?: string;
  includeDrafts: boolean;
  includeArchived: boolean;
  /** When the read must be over (epoch ms); the reader's timeout (`READ_TIMEOUT_MS`) from the call when not given. */
  deadline?: number;
}

/** A page of entries as the API's JSON texts, and the cursor of the next page (null when none follows). */
export interface JsonPage {
  entries: string[];
  nextCursor: string | null;
}

/**
 * Reads pages of a type's entries, with the search `q` applied: only reads, so it runs on
 * any connection to the database, in the server's thread or in a read worker (see
 * read-workers.ts).
 */
export function createPageReader({ db, searchDriveLimit, timeoutMs = READ_TIMEOUT_MS }: { db: Db; searchDriveLimit?: number; timeoutMs?: number }) {
  const dialect = dialectOf(db);
  // Estimates choose search plans; a minute-old one is good enough for that.
  const estimates = {
    stats: new TrigramStats(db, { sample: 1000, ttlMs: 60_000, maxEntries: 50_000 }),
    counts: new RememberedCounts({ ttlMs: 60_000, maxEntries: 50_000 }),
  };

  return {
    /**
     * A page of a type's entries, oldest first, each as the API's JSON text (the route sends
     * them as they are); `nextCursor` is null exactly when no further entry exists.
     */
    async listJson(type: EntryTypeWithFields, options: ListOptions): Promise<JsonPage> {
      const deadline = options.deadline ?? Date.now() + timeoutMs;
      let rows: string[];
      try {
        const page = await this.planPage(type, { ...options, deadline });
        // Only a search can read long; a plain page is a bounded walk of the page-order index.
        const searches = page.plan.kind === 'postings' || page.plan.filter !== undefined;
        rows = await queries.listEntries(db, page, searches ? deadline : undefined);
      } catch (err) {
        // A statement stopped by its deadline, or anything failing past it.
        if (dialect.isDeadlinePassed(err) || (!(err instanceof HttpError) && Date.now() > deadline)) throw new SearchTimedOutError();
        throw err;
      }
      const page = keysetPage(rows, options.limit, (json) => JSON.parse(json) as { created_at: string; id: string });
      return { entries: page.items, nextCursor: page.nextCursor };
    },

    /** What `listJson` reads: its page and one entry more, under the search's plan (the bench explains it). */
    async planPage(type: EntryTypeWithFields, options: ListOptions): Promise<queries.EntryListOptions> {
      const after = decodeAfter(options.after, (id) => UUID_PATTERN.test(id));
      const planOptions = { ...estimates, driveLimit: searchDriveLimit, deadline: options.deadline };
      const plan =
        options.primaryContains === undefined
          ? await planSearch(db, type, options.q ?? '', planOptions)
          : await planPredicate(db, type, primaryContains(type.fields, options.primaryContains), planOptions);
      return {
        entryTypeId: type.id,
        includeDrafts: options.includeDrafts,
        includeArchived: options.includeArchived,
        plan,
        after,
        limit: options.limit + 1,
      };
    },
  };
}
