import type { Knex } from 'knex';
import type { Db } from '../../db/knex.js';
import type { Position } from '../../http/cursor.js';
import { BadRequestError } from '../../http/errors.js';
import type { EntryTypeWithFields } from '../entry-type-service.js';
import { pageOrder } from '../queries.js';
import { SearchSyntaxError, parseSearch } from './parser.js';
import { type Predicate, resolveSearch } from './resolve.js';
import type { RememberedCounts } from './remembered-counts.js';
import { type TextLookup, type TrigramStats, whereEntryHasText, whereTextContains, whereValueHasText } from './text-match.js';

export const messages = {
  invalidQuery: (reason: string) => `Invalid search query: ${reason}`,
  tooLong: 'query is longer than 2000 characters',
};

const MAX_QUERY_LENGTH = 2000;

/**
 * The most matches a search lists from its indexes, for a type of `entryCount` entries.
 * Listing k matches sorts k index rows; reading in page order checks about 100 · N / k
 * entries for a page. The two meet near √(100 · N): about 3,000 at 100,000 entries and
 * 10,000 at 1,000,000 (docs/performance.md, "How a search runs").
 */
export function driveLimitFor(entryCount: number): number {
  return Math.min(20_000, Math.max(1000, Math.round(Math.sqrt(100 * entryCount))));
}

/** What a page of entries is read under: the visibility flags and the keyset position. */
export interface PageWindow {
  includeDrafts: boolean;
  includeArchived: boolean;
  after?: Position;
}

/**
 * How a page of a search is read:
 * - `scan`: the type's entries in page order from the cursor (entries_type_created), each
 *   checked with `filter` on the alias `e`, until the page is full. For no search, or many
 *   matches.
 * - `postings`: the matches' search rows (typed values, links, text values), which carry
 *   their entry's page key and visibility, filtered and sorted on their indexes;
 *   `page(window, limit)` selects the first `limit` of them in page order, as
 *   `entry_id, entry_created_at`, and only those entries are then read. For few matches.
 */
export type SearchPlan =
  | { kind: 'scan'; filter?: (query: Knex.QueryBuilder) => void }
  | { kind: 'postings'; page: (window: PageWindow, limit: number) => Knex.QueryBuilder };

export interface PlanOptions {
  stats: TrigramStats;
  /** Where the typed values' and links' counts are remembered. */
  counts: RememberedCounts;
  /** Overrides `driveLimitFor`; negative: always scan (tests force each plan with it). */
  driveLimit?: number;
}

/**
 * Turns `q` into a plan for reading a page of `type`'s entries. Every value travels as a
 * bound parameter; nothing from `q` is spliced into SQL. Throws 400
 * `Invalid search query: <reason>`.
 */
export async function planSearch(db: Db, type: EntryTypeWithFields, q: string, options: PlanOptions): Promise<SearchPlan> {
  if (q.length > MAX_QUERY_LENGTH) throw new BadRequestError(messages.invalidQuery(messages.tooLong));
  let predicate: Predicate;
  try {
    const ast = parseSearch(q);
    if (!ast) return { kind: 'scan' };
    predicate = resolveSearch(ast, type.fields);
  } catch (err) {
    if (err instanceof SearchSyntaxError) throw new BadRequestError(messages.invalidQuery(err.message));
    throw err;
  }
  const limit = options.driveLimit ?? driveLimitFor(type.entry_count);
  if (limit >= 0) {
    const planner = new Planner(db, options, type, limit);
    const estimate = await planner.estimate(predicate);
    if (estimate !== undefined && estimate <= limit) {
      return { kind: 'postings', page: (window, pageLimit) => inPageOrder(db, planner.candidates(predicate, window), pageLimit) };
    }
  }
  return { kind: 'scan', filter: (query) => check(db, query, predicate, { entryId: 'e.id', organizationId: type.organization_id }) };
}

type Leaf = Exclude<Predicate, { kind: 'and' | 'or' | 'words' }>;

/**
 * Kinds estimated from trigram statistics, asked first in an `&&`: when one of them has few
 * matches, the typed branches after it are not counted at all (see `estimate`).
 */
const TEXT_KINDS = new Set<Predicate['kind']>(['words', 'text-contains']);

class Planner {
  /** For an `&&`, the branch that lists the fewest matches; for general text, its rarest word. */
  private readonly drivers = new Map<Predicate, Predicate | string>();
  private readonly lookups = new Map<Predicate | string, TextLookup>();

  constructor(
    private readonly db: Db,
    private readonly estimates: Pick<PlanOptions, 'stats' | 'counts'>,
    private readonly type: EntryTypeWithFields,
    private readonly limit: number,
  ) {}

  /**
   * About how many entries the predicate matches, from its indexes, when they can list them
   * (an upper bound; more than `limit` means too many to list); undefined when they cannot
   * (created_at / updated_at, text shorter than a trigram, or an `||` with such a branch).
   */
  async estimate(predicate: Predicate): Promise<number | undefined> {
    switch (predicate.kind) {
      case 'and': {
        let best: { item: Predicate; estimate: number } | undefined;
        const ordered = [...predicate.items].sort((a, b) => Number(TEXT_KINDS.has(b.kind)) - Number(TEXT_KINDS.has(a.kind)));
        for (const item of ordered) {
          const estimate = await this.estimate(item);
          if (estimate !== undefined && (!best || estimate < best.estimate)) best = { item, estimate };
          // The other branches are only checked on these few; counting them would cost more.
          if (best && best.estimate <= this.limit / 10) break;
        }
        if (best) this.drivers.set(predicate, best.item);
        return best?.estimate;
      }
      case 'or': {
        let sum = 0;
        for (const item of predicate.items) {
          const estimate = await this.estimate(item);
          if (estimate === undefined) return undefined;
          sum += estimate;
          if (sum > this.limit) return sum;
        }
        return sum;
      }
      case 'words': {
        let best: { word: string; estimate: number } | undefined;
        for (const word of predicate.words) {
          const lookup = await this.estimates.stats.lookup(word);
          if (!lookup) continue;
          this.lookups.set(word, lookup);
          if (!best || lookup.estimate < best.estimate) best = { word, estimate: lookup.estimate };
        }
        if (best) this.drivers.set(predicate, best.word);
        return best?.estimate;
      }
      case 'text-contains': {
        const lookup = await this.estimates.stats.lookup(predicate.text);
        if (lookup) this.lookups.set(predicate, lookup);
        return lookup?.estimate;
      }
      case 'timestamp':
        return undefined;
      default:
        return this.estimates.counts.get(countKey(this.type.id, predicate, this.limit), async () => {
          const found = this.postings(predicate).select(this.db.raw('1')).limit(this.limit + 1);
          const row = (await this.db.from(found.as('found')).count({ n: '*' }).first()) as { n: number };
          return Number(row.n);
        });
    }
  }

  /**
   * The entries the predicate matches within the window, as `entry_id, entry_created_at`
   * (unordered; the caller sorts and takes a page). Only for a predicate `estimate` listed.
   */
  candidates(predicate: Predicate, window: PageWindow): Knex.QueryBuilder {
    const { db } = this;
    switch (predicate.kind) {
      case 'or': {
        const [first, ...rest] = predicate.items.map((item) => this.candidates(item, window));
        return rest.length ? first!.union(rest) : first!;
      }
      case 'and': {
        const driver = this.drivers.get(predicate) as Predicate;
        const others = predicate.items.filter((item) => item !== driver);
        return others.length ? this.checked(this.candidates(driver, window), others) : this.candidates(driver, window);
      }
      case 'words': {
        const word = this.drivers.get(predicate) as string;
        const values = db('entry_values as p').whereIn('p.field_id', this.type.fields.filter((f) => f.type === 'text').map((f) => f.id));
        whereValueHasText(db, values, 'p', word, this.lookups.get(word)!);
        const driven = inWindow(values, window).distinct('p.entry_id', 'p.entry_created_at');
        const others = predicate.words.filter((w) => w !== word);
        return others.length ? this.checked(driven, [{ kind: 'words', words: others }]) : driven;
      }
      default: {
        // An entry has one value per field, but may link to several entries of one name.
        const postings = inWindow(this.postings(predicate), window);
        return predicate.kind === 'relationship' ? postings.distinct('p.entry_id', 'p.entry_created_at') : postings.select('p.entry_id', 'p.entry_created_at');
      }
    }
  }

  /**
   * Keeps the candidates (alias `d`) for which every one of `checks` holds, checking them in
   * page order so that reading stops once a page is full (the caller orders by the same key,
   * which SQLite then need not sort again). Typed values and links are looked up by the
   * candidate's id; the entry itself (`e`) is read only when a check needs its text or
   * timestamps.
   */
  private checked(candidates: Knex.QueryBuilder, checks: Predicate[]): Knex.QueryBuilder {
    const { db } = this;
    // The LIMIT keeps SQLite from flattening the sorted candidates into the checks, which
    // would check every candidate before sorting (2,000 at 1,000,000 entries: 8.6 → 3.1 ms).
    const sorted = inPageOrder(db, candidates, Number.MAX_SAFE_INTEGER);
    const query = db.from(sorted.as('d')).select('d.entry_id', 'd.entry_created_at');
    if (checks.some(needsEntryRow)) query.join('entries as e', 'e.id', 'd.entry_id');
    const context = { entryId: 'd.entry_id', organizationId: this.type.organization_id };
    return query.where((outer) => {
      for (const item of checks) outer.where((inner) => check(db, inner, item, context));
    });
  }

  /** The search rows (alias `p`) of a leaf's matches: typed values or links, which carry their entry's page key. */
  private postings(predicate: Leaf): Knex.QueryBuilder {
    const { db } = this;
    const values = (fieldId: string) => db('entry_values as p').where('p.field_id', fieldId);
    switch (predicate.kind) {
      case 'number':
        return whereAll(values(predicate.field.id), 'p.number_value', predicate.conditions);
      case 'date':
        return whereAll(values(predicate.field.id), 'p.date_value', predicate.conditions);
      case 'boolean':
        return values(predicate.field.id).where('p.bool_value', predicate.value);
      case 'text-contains': {
        const query = values(predicate.field.id);
        whereValueHasText(db, query, 'p', predicate.text, this.lookups.get(predicate)!);
        return query;
      }
      case 'relationship': {
        const fieldIds = predicate.field ? [predicate.field.id] : this.type.fields.filter((f) => f.type === 'relationship').map((f) => f.id);
        return db('entry_links as p')
          .join('entries as t', 't.id', 'p.target_entry_id')
          .where('t.organization_id', this.type.organization_id)
          .where('t.primary_text', predicate.primary)
          .whereIn('p.field_id', fieldIds);
      }
      case 'timestamp':
        throw new Error('created_at and updated_at have no postings');
    }
  }
}

/** What a leaf's capped count depends on: the type, the field (a link may name none: any of the type's), the values, the cap. */
function countKey(typeId: string, predicate: Exclude<Leaf, { kind: 'text-contains' | 'timestamp' }>, limit: number): string {
  const { kind } = predicate;
  const field = predicate.field?.id ?? null;
  switch (kind) {
    case 'number':
    case 'date':
      return JSON.stringify([typeId, kind, field, predicate.conditions, limit]);
    case 'boolean':
      return JSON.stringify([typeId, kind, field, predicate.value, limit]);
    case 'relationship':
      return JSON.stringify([typeId, kind, field, predicate.primary, limit]);
  }
}

/** The first `limit` candidates (`entry_id, entry_created_at`) in page order. */
function inPageOrder(db: Db, candidates: Knex.QueryBuilder, limit: number): Knex.QueryBuilder {
  return db.from(candidates.as('c')).select('c.entry_id', 'c.entry_created_at').orderBy(pageOrder('c.entry_created_at', 'c.entry_id')).limit(limit);
}

/** Search rows (alias `p`) of entries inside the window: visible under its flags, after its position. */
function inWindow(query: Knex.QueryBuilder, window: PageWindow): Knex.QueryBuilder {
  if (!window.includeDrafts) query.where('p.entry_draft', false);
  if (!window.includeArchived) query.where('p.entry_archived', false);
  if (window.after) query.whereRaw('(p.entry_created_at, p.entry_id) > (?, ?)', [window.after.createdAt, window.after.id]);
  return query;
}

/** Whether checking the predicate reads the entry row `e` (its text or timestamps), not only its typed values and links. */
function needsEntryRow(predicate: Predicate): boolean {
  if (predicate.kind === 'and' || predicate.kind === 'or') return predicate.items.some(needsEntryRow);
  return predicate.kind === 'words' || predicate.kind === 'timestamp';
}

/**
 * Checks the predicate on one entry: its typed values and links by `entryId` (a column),
 * its text and timestamps on its row `e`. Correlated index lookups, cheap per entry.
 */
function check(db: Db, query: Knex.QueryBuilder, predicate: Predicate, context: { entryId: string; organizationId: string }): void {
  const valueOf = (fieldId: string) => db('entry_values as v').select(db.raw('1')).whereRaw('v.entry_id = ??', [context.entryId]).where('v.field_id', fieldId);
  switch (predicate.kind) {
    case 'and':
      for (const item of predicate.items) query.where((inner) => check(db, inner, item, context));
      return;
    case 'or':
      query.where((group) => {
        for (const item of predicate.items) group.orWhere((inner) => check(db, inner, item, context));
      });
      return;
    case 'words':
      for (const word of predicate.words) whereEntryHasText(query, word);
      return;
    case 'text-contains':
      query.whereExists(whereTextContains(valueOf(predicate.field.id), 'v', predicate.text));
      return;
    case 'number':
      query.whereExists(whereAll(valueOf(predicate.field.id), 'v.number_value', predicate.conditions));
      return;
    case 'date':
      query.whereExists(whereAll(valueOf(predicate.field.id), 'v.date_value', predicate.conditions));
      return;
    case 'boolean':
      query.whereExists(valueOf(predicate.field.id).where('v.bool_value', predicate.value));
      return;
    case 'timestamp':
      query.where(`e.${predicate.column}`, predicate.operator, predicate.value);
      if (predicate.before) query.where(`e.${predicate.column}`, '<', predicate.before);
      return;
    case 'relationship': {
      const links = db('entry_links as l')
        .join('entries as t', 't.id', 'l.target_entry_id')
        .whereRaw('l.entry_id = ??', [context.entryId])
        .where('t.organization_id', context.organizationId)
        .where('t.primary_text', predicate.primary)
        .select(db.raw('1'));
      if (predicate.field) links.where('l.field_id', predicate.field.id);
      query.whereExists(links);
      return;
    }
  }
}

function whereAll(query: Knex.QueryBuilder, column: string, conditions: ReadonlyArray<{ operator: string; value: number | string }>): Knex.QueryBuilder {
  for (const { operator, value } of conditions) query.where(column, operator, value);
  return query;
}
