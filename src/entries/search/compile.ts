import type { Knex } from 'knex';
import type { Db } from '../../db/knex.js';
import type { Position } from '../../http/cursor.js';
import { BadRequestError } from '../../http/errors.js';
import type { EntryTypeWithFields } from '../entry-type-service.js';
import { entriesInWindow, pageOrder } from '../queries.js';
import { TEXT_SEPARATOR } from '../field-values.js';
import { type SearchNode, SearchSyntaxError, parseSearch } from './parser.js';
import { type Predicate, resolveSearch } from './resolve.js';
import type { RememberedCounts } from './remembered-counts.js';
import { dialectOf } from '../../db/dialect.js';
import { type TextLookup, type TrigramStats, whereEntryHasAnyText, whereEntryHasText, whereTextContains, whereValueHasText } from './text-match.js';

export const messages = {
  invalidQuery: (reason: string) => `Invalid search query: ${reason}`,
  tooLong: 'query is longer than 2000 characters',
  tooManyTerms: 'more than 20 terms',
};

const MAX_QUERY_LENGTH = 2000;
/** The most terms one query may hold (docs/api.md, search limits): each can cost a lookup per entry read. */
export const MAX_TERMS = 20;

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
 * - `scan`: the type's entries in page order from the cursor (entries_type_page), each
 *   checked with `filter` on the alias `e`, until the page is full. For no search, or many
 *   matches.
 * - `postings`: the matches' search rows (typed values, links, text values), which carry
 *   their entry's page key and visibility, filtered and sorted on their indexes;
 *   `page(window, limit)` selects the first `limit` of them in page order, as
 *   `entry_id, entry_created_at`, and only those entries are then read. For few matches.
 *   What no index can list (text shorter than a trigram, timestamps) is found beside them
 *   by reading in page order, checking only that part (see `Cover`).
 */
export type SearchPlan = { kind: 'scan'; filter?: (query: Knex.QueryBuilder) => void } | { kind: 'postings'; page: (window: PageWindow, limit: number) => Knex.QueryBuilder };

export interface PlanOptions {
  stats: TrigramStats;
  /** Where the typed values' and links' counts are remembered. */
  counts: RememberedCounts;
  /** Overrides `driveLimitFor`; negative: always scan (tests force each plan with it). */
  driveLimit?: number;
  /**
   * When the reading must stop (epoch ms): the statements that read entry after entry
   * check it on each (`within_deadline`) and fail once it has passed.
   */
  deadline?: number;
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
    if (countTerms(ast) > MAX_TERMS) throw new BadRequestError(messages.invalidQuery(messages.tooManyTerms));
    predicate = resolveSearch(ast, type.fields);
  } catch (err) {
    if (err instanceof SearchSyntaxError) throw new BadRequestError(messages.invalidQuery(err.message));
    throw err;
  }
  return planPredicate(db, type, predicate, options);
}

/** Plans the reading of `type`'s entries that hold `predicate` (a parsed `q`, or one built by code). */
export async function planPredicate(db: Db, type: EntryTypeWithFields, predicate: Predicate, options: PlanOptions): Promise<SearchPlan> {
  const context = { entryId: 'e.id', organizationId: type.organization_id, entryRow: true, deadline: options.deadline };
  const limit = options.driveLimit ?? driveLimitFor(type.entry_count);
  if (limit >= 0) {
    const planner = new Planner(db, options, type, limit, options.deadline);
    const cover = await planner.cover(predicate);
    // Reading in page order checks every source of a union on each entry, so a union may list
    // as many more matches as it has sources before reading in page order is cheaper.
    if (cover && cover.estimate <= limit * cover.sources) {
      return {
        kind: 'postings',
        page: (window, pageLimit) => {
          const listed = planner.candidates(predicate, window);
          if (!cover.residual) return inPageOrder(db, listed, pageLimit);
          const { residual } = cover;
          const scanned = entriesInWindow(db, type.id, window, 'e')
            .select({ entry_id: 'e.id', entry_created_at: 'e.created_at' })
            .where((query) => checkOnTime(db, query, residual, context))
            .orderBy(pageOrder('e.created_at', 'e.id'))
            .limit(pageLimit);
          // Only the page's first entries of each part can be among the page's first entries.
          return inPageOrder(db, listed.union(db.from(scanned.as('s')).select('s.entry_id', 's.entry_created_at')), pageLimit);
        },
      };
    }
  }
  return { kind: 'scan', filter: (query) => checkOnTime(db, query, predicate, context) };
}

/** The terms of a parsed query. */
function countTerms(node: SearchNode): number {
  return node.kind === 'term' ? 1 : node.items.reduce((sum, item) => sum + countTerms(item), 0);
}

type Leaf = Exclude<Predicate, { kind: 'and' | 'or' | 'words' }>;

/**
 * What the indexes can list of a predicate's matches: about how many (an upper bound), from
 * how many postings sources in a union, and the part they cannot list, `residual`: the
 * predicate's other matches, which are those of `residual`, found by reading the type's
 * entries in page order and checking only `residual` on each. So `x || ab` lists the matches
 * of `x` and reads in page order for `ab` alone, instead of checking both on every entry.
 */
interface Cover {
  estimate: number;
  sources: number;
  residual?: Predicate;
}

/**
 * Kinds estimated from trigram statistics, asked first in an `&&`: when one of them has few
 * matches, the typed branches after it are not counted at all (see `estimate`).
 */
const TEXT_KINDS = new Set<Predicate['kind']>(['words', 'text-contains']);

class Planner {
  /** For an `&&`, the branch that lists the fewest matches; for general text, its rarest word. */
  private readonly drivers = new Map<Predicate, Predicate | string>();
  /** For an `||`, the branches the indexes list (the others are its cover's residual). */
  private readonly listed = new Map<Predicate, Predicate[]>();
  private readonly lookups = new Map<Predicate | string, TextLookup>();

  constructor(
    private readonly db: Db,
    private readonly estimates: Pick<PlanOptions, 'stats' | 'counts'>,
    private readonly type: EntryTypeWithFields,
    private readonly limit: number,
    private readonly deadline?: number,
  ) {}

  /**
   * What the indexes can list of the predicate (see `Cover`); undefined when they can list
   * none of it (created_at / updated_at, text shorter than a trigram, or an `&&` of such).
   * An estimate above `limit` means too many to list.
   */
  async cover(predicate: Predicate): Promise<Cover | undefined> {
    switch (predicate.kind) {
      case 'and': {
        let best: { item: Predicate; cover: Cover } | undefined;
        const ordered = [...predicate.items].sort((a, b) => Number(TEXT_KINDS.has(b.kind)) - Number(TEXT_KINDS.has(a.kind)));
        for (const item of ordered) {
          const cover = await this.cover(item);
          if (cover && (!best || drivesBetter(cover, best.cover))) best = { item, cover };
          // The other branches are only checked on these few; counting them would cost more.
          if (best && !best.cover.residual && best.cover.estimate <= this.limit / 10) break;
        }
        if (!best) return undefined;
        this.drivers.set(predicate, best.item);
        const { estimate, sources, residual } = best.cover;
        // The driver's residual matches still have to pass the other branches: checked after it.
        const others = predicate.items.filter((item) => item !== best.item);
        return { estimate, sources, residual: residual && { kind: 'and', items: [residual, ...others] } };
      }
      case 'or': {
        const listed: Predicate[] = [];
        const residuals: Predicate[] = [];
        let estimate = 0;
        let sources = 0;
        for (const item of predicate.items) {
          const cover = await this.cover(item);
          if (!cover) {
            residuals.push(item);
            continue;
          }
          listed.push(item);
          estimate += cover.estimate;
          sources += cover.sources;
          if (cover.residual) residuals.push(cover.residual);
        }
        if (listed.length === 0) return undefined;
        this.listed.set(predicate, listed);
        return { estimate, sources, residual: residuals.length === 0 ? undefined : residuals.length === 1 ? residuals[0] : { kind: 'or', items: residuals } };
      }
      case 'words': {
        let best: { word: string; estimate: number } | undefined;
        for (const word of predicate.words) {
          const lookup = await this.estimates.stats.lookup(word);
          if (!lookup) continue;
          this.lookups.set(word, lookup);
          if (!best || lookup.estimate < best.estimate) best = { word, estimate: lookup.estimate };
        }
        if (!best) return undefined;
        this.drivers.set(predicate, best.word);
        return { estimate: best.estimate, sources: 1 };
      }
      case 'text-contains': {
        const lookup = await this.estimates.stats.lookup(predicate.text);
        if (!lookup) return undefined;
        this.lookups.set(predicate, lookup);
        return { estimate: lookup.estimate, sources: 1 };
      }
      case 'timestamp':
        return undefined;
      case 'none':
        return { estimate: 0, sources: 1 };
      default: {
        const estimate = await this.estimates.counts.get(countKey(this.type.id, predicate, this.limit), async () => {
          const found = this.postings(predicate)
            .select(this.db.raw('1'))
            .limit(this.limit + 1);
          const row = (await this.db.from(found.as('found')).count({ n: '*' }).first()) as { n: number };
          return Number(row.n);
        });
        return { estimate, sources: 1 };
      }
    }
  }

  /**
   * The entries the indexes list of the predicate's matches within the window, as
   * `entry_id, entry_created_at` (unordered; the caller sorts and takes a page, and reads its
   * cover's residual beside them). Only for a predicate that `cover` covered.
   */
  candidates(predicate: Predicate, window: PageWindow): Knex.QueryBuilder {
    const { db } = this;
    switch (predicate.kind) {
      case 'or': {
        const [first, ...rest] = this.listed.get(predicate)!.map((item) => this.candidates(item, window));
        return rest.length ? first!.union(rest) : first!;
      }
      case 'and': {
        const driver = this.drivers.get(predicate) as Predicate;
        const others = predicate.items.filter((item) => item !== driver);
        return others.length ? this.checked(this.candidates(driver, window), others) : this.candidates(driver, window);
      }
      case 'words': {
        const word = this.drivers.get(predicate) as string;
        const values = db('entry_values as p').whereIn(
          'p.field_id',
          this.type.fields.filter((f) => f.type === 'text').map((f) => f.id),
        );
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
    // would check every candidate before sorting, instead of stopping once a page is full.
    const sorted = inPageOrder(db, candidates, Number.MAX_SAFE_INTEGER);
    const query = db.from(sorted.as('d')).select('d.entry_id', 'd.entry_created_at');
    const entryRow = checks.some(needsEntryRow);
    if (entryRow) query.join('entries as e', 'e.id', 'd.entry_id');
    const context = { entryId: 'd.entry_id', organizationId: this.type.organization_id, entryRow, deadline: this.deadline };
    return query.where((outer) => checkOnTime(db, outer, { kind: 'and', items: checks }, context));
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
      case 'none':
        return db('entry_values as p').whereRaw('1 = 0');
    }
  }
}

/** Whether `a` drives an `&&` better than `b`: one that leaves nothing to read in page order, then the fewer matches. */
function drivesBetter(a: Cover, b: Cover): boolean {
  if (!a.residual !== !b.residual) return !a.residual;
  return a.estimate < b.estimate;
}

/** What a leaf's capped count depends on: the type, the field (a link may name none: any of the type's), the values, the cap. */
function countKey(typeId: string, predicate: Exclude<Leaf, { kind: 'text-contains' | 'timestamp' | 'none' }>, limit: number): string {
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

/** Where `check` finds an entry: its id column, its organization, and whether its row `e` is at hand; when to stop. */
interface CheckContext {
  entryId: string;
  organizationId: string;
  entryRow: boolean;
  deadline?: number;
}

/** `check`, in a statement that reads entry after entry: it stops at the deadline, checked before anything else on each. */
function checkOnTime(db: Db, query: Knex.QueryBuilder, predicate: Predicate, context: CheckContext): void {
  if (context.deadline !== undefined) dialectOf(db).whereWithinDeadline(query, context.deadline);
  check(db, query, predicate, context);
}

/**
 * Checks the predicate on one entry: its typed values and links by `entryId` (a column),
 * its text and timestamps on its row `e`. Correlated index lookups, cheap per entry; where
 * the row is at hand, a field's text is first looked for in the row's folded text, so an
 * entry without it costs no lookup.
 */
function check(db: Db, query: Knex.QueryBuilder, predicate: Predicate, context: CheckContext): void {
  const valueRows = () => db('entry_values as v').select(db.raw('1')).whereRaw('v.entry_id = ??', [context.entryId]);
  const valueRowOf = (fieldId: string) => valueRows().where('v.field_id', fieldId);
  switch (predicate.kind) {
    case 'and': {
      // Cheap checks first: an entry that fails one is not looked up for the others.
      const items = context.entryRow ? [...predicate.items].sort((a, b) => checkCost(a) - checkCost(b)) : predicate.items;
      for (const item of items) query.where((inner) => check(db, inner, item, context));
      return;
    }
    case 'or': {
      // The branches that need some text are tested together first: an entry that holds none
      // of their texts is ruled out in one test, however many branches there are.
      const needs = new Map(context.entryRow ? predicate.items.map((item) => [item, requiredTexts(item)] as const).filter(([, texts]) => texts) : []);
      const grouped = needs.size > 1 ? [...needs.keys()] : [];
      query.where((group) => {
        if (grouped.length) {
          group.orWhere((inner) => {
            whereEntryHasAnyText(db, inner, [...new Set([...needs.values()].flat() as string[])]);
            inner.where((any) => {
              for (const item of grouped) any.orWhere((one) => check(db, one, item, context));
            });
          });
        }
        for (const item of predicate.items) if (!grouped.includes(item)) group.orWhere((inner) => check(db, inner, item, context));
      });
      return;
    }
    case 'words': {
      whereEvery(query, predicate.words, whereEntryHasText);
      for (const word of predicate.words.filter((w) => w.includes(TEXT_SEPARATOR))) query.whereExists(whereTextContains(valueRows(), 'v', word));
      return;
    }
    case 'text-contains':
      if (context.entryRow) whereEntryHasText(query, predicate.text);
      query.whereExists(whereTextContains(valueRowOf(predicate.field.id), 'v', predicate.text));
      return;
    case 'number':
      query.whereExists(whereAll(valueRowOf(predicate.field.id), 'v.number_value', predicate.conditions));
      return;
    case 'date':
      query.whereExists(whereAll(valueRowOf(predicate.field.id), 'v.date_value', predicate.conditions));
      return;
    case 'boolean':
      query.whereExists(valueRowOf(predicate.field.id).where('v.bool_value', predicate.value));
      return;
    case 'timestamp':
      query.where(`e.${predicate.column}`, predicate.operator, predicate.value);
      if (predicate.before) query.where(`e.${predicate.column}`, '<', predicate.before);
      return;
    case 'none':
      query.whereRaw('1 = 0');
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

/**
 * The most conditions one level of `whereEvery` joins. SQLite refuses an expression tree
 * deeper than 1,000, and a chain of n ANDs is n deep; in groups of 32, a thousand words
 * are about 64 deep.
 */
const AND_GROUP = 32;

/** Adds `add(query, item)` for each item, all of which must hold, nested in groups so that the expression stays shallow. */
function whereEvery<T>(query: Knex.QueryBuilder, items: readonly T[], add: (query: Knex.QueryBuilder, item: T) => void): void {
  if (items.length <= AND_GROUP) {
    for (const item of items) add(query, item);
    return;
  }
  const size = Math.ceil(items.length / AND_GROUP);
  for (let i = 0; i < items.length; i += size) query.where((group) => whereEvery(group, items.slice(i, i + size), add));
}

/** How much checking the predicate on an entry row costs, in rank order: row columns first, index lookups last. */
function checkCost(predicate: Predicate): number {
  switch (predicate.kind) {
    case 'timestamp':
      return 0;
    case 'words':
      return 1;
    case 'text-contains':
      return 2; // its text is looked for in the row first
    case 'and':
    case 'or':
      return 3;
    default:
      return 4;
  }
}

/**
 * Texts of which an entry's folded text must hold at least one for the predicate to hold
 * (each text value is part of it); undefined when no text is needed (a branch on typed
 * values, links or timestamps alone).
 */
function requiredTexts(predicate: Predicate): string[] | undefined {
  switch (predicate.kind) {
    case 'words':
      return [predicate.words.reduce((a, b) => (b.length > a.length ? b : a))];
    case 'text-contains':
      return [predicate.text];
    case 'and': {
      const options = predicate.items.map(requiredTexts).filter((texts) => texts !== undefined);
      return options.length ? options.reduce((a, b) => (b.length < a.length ? b : a)) : undefined;
    }
    case 'or': {
      const all = predicate.items.map(requiredTexts);
      return all.every((texts) => texts !== undefined) ? [...new Set(all.flat() as string[])] : undefined;
    }
    default:
      return undefined;
  }
}

function whereAll(query: Knex.QueryBuilder, column: string, conditions: ReadonlyArray<{ operator: string; value: number | string }>): Knex.QueryBuilder {
  for (const { operator, value } of conditions) query.where(column, operator, value);
  return query;
}
