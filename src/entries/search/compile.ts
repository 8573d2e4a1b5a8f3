import type { Knex } from 'knex';
import type { Db } from '../../db/knex.js';
import { readIdList, whereIdIn } from '../../db/id-list.js';
import { BadRequestError } from '../../http/errors.js';
import type { EntryTypeWithFields } from '../entry-type-service.js';
import { SearchSyntaxError, parseSearch } from './parser.js';
import { type Predicate, resolveSearch } from './resolve.js';
import { listEntriesWithText, whereEntryHasText } from './text-match.js';

export const messages = {
  invalidQuery: (reason: string) => `Invalid search query: ${reason}`,
  tooLong: 'query is longer than 2000 characters',
};

const MAX_QUERY_LENGTH = 2000;

/**
 * How many matching entries a query may have for their ids to drive it. Up to this, the ids
 * come from the indexes (trigram, typed values, links), the page is read by id, what the ids
 * do not guarantee is checked on those candidates, and they are sorted; above it, entries
 * are read in page order and each is checked, which stops as soon as the page is full.
 * At 100,000 entries the two plans cost about the same near 2,000 matches.
 */
export const DRIVE_LIMIT = 2000;

export type SearchFilter = (query: Knex.QueryBuilder) => void;

/**
 * Turns `q` into a filter on the entries query (alias `e`), or undefined for no filter.
 * Every value travels as a bound parameter; nothing from `q` is spliced into SQL.
 * Throws 400 `Invalid search query: <reason>`.
 */
export async function compileSearch(
  db: Db,
  type: EntryTypeWithFields,
  q: string,
  { driveLimit = DRIVE_LIMIT }: { driveLimit?: number } = {},
): Promise<SearchFilter | undefined> {
  if (q.length > MAX_QUERY_LENGTH) throw new BadRequestError(messages.invalidQuery(messages.tooLong));
  let predicate: Predicate;
  try {
    const ast = parseSearch(q);
    if (!ast) return undefined;
    predicate = resolveSearch(ast, type.fields);
  } catch (err) {
    if (err instanceof SearchSyntaxError) throw new BadRequestError(messages.invalidQuery(err.message));
    throw err;
  }
  // A negative limit (tests) means: always read in page order.
  const planner = new Planner(db, type, Math.max(driveLimit, 0));
  const matches = await planner.match(predicate);
  return (query) => {
    if (matches.ids && driveLimit >= 0) planner.drive(query, predicate);
    else planner.check(query, predicate);
  };
}

/** What an index says a part of the query matches: the entry ids, when there are at most the limit. */
interface Matches {
  /** Undefined when there are more than the limit, or no index can list them. */
  ids?: string[];
  /** True when the ids are exactly the matches; false when a superset (text from the trigram index). */
  exact: boolean;
  /** For an `&&`: the branch whose ids these are. */
  driver?: Predicate;
}

class Planner {
  private readonly matches = new Map<Predicate, Matches>();

  constructor(
    private readonly db: Db,
    private readonly type: EntryTypeWithFields,
    private readonly limit: number,
  ) {}

  /**
   * Looks up, bottom-up, which parts of the query have few enough matches to list: a leaf
   * when its index yields at most `limit` ids, an `&&` when any branch does (the
   * smallest), an `||` when all branches do (their union).
   */
  async match(predicate: Predicate): Promise<Matches> {
    let result: Matches;
    if (predicate.kind === 'and' || predicate.kind === 'or') {
      const parts: Array<{ item: Predicate; matches: Matches }> = [];
      for (const item of predicate.items) {
        const matches = await this.match(item);
        parts.push({ item, matches });
        // In an &&, once a branch lists few ids the others need only be checked on them,
        // not listed: listing a common branch is what costs (it reads up to `limit` ids).
        if (predicate.kind === 'and' && matches.ids && matches.ids.length <= this.limit / 10) break;
      }
      const listed = parts.filter((p) => p.matches.ids !== undefined);
      if (predicate.kind === 'and') {
        const smallest = listed.sort((a, b) => a.matches.ids!.length - b.matches.ids!.length)[0];
        result = smallest ? { ids: smallest.matches.ids, exact: false, driver: smallest.item } : { exact: false };
      } else {
        const union = new Set(listed.flatMap((p) => p.matches.ids!));
        const complete = listed.length === parts.length && union.size <= this.limit;
        result = complete ? { ids: [...union], exact: parts.every((p) => p.matches.exact) } : { exact: false };
      }
    } else if (predicate.kind === 'words') {
      const parts = await Promise.all(predicate.words.map((word) => listEntriesWithText(this.db, word, this.limit)));
      const listed = parts.filter((ids): ids is string[] => ids !== undefined);
      result = { ids: listed.length > 0 ? listed.reduce((a, b) => (b.length < a.length ? b : a)) : undefined, exact: false };
    } else if (predicate.kind === 'text-contains') {
      result = { ids: await listEntriesWithText(this.db, predicate.text, this.limit, predicate.field.id), exact: false };
    } else {
      const ids = this.ids(predicate);
      result = { ids: await list(this.db, ids, this.limit), exact: ids !== null };
    }
    this.matches.set(predicate, result);
    return result;
  }

  /**
   * Reads the page by id from the listed matches, and checks on those candidates whatever
   * the ids do not already guarantee: in an `&&`, the other branches (and the driving one
   * when its ids are a superset); elsewhere, the part itself unless its ids are exact.
   */
  drive(query: Knex.QueryBuilder, predicate: Predicate): void {
    const matches = this.matches.get(predicate)!;
    whereIdIn(query, 'e.id', matches.ids!);
    if (predicate.kind === 'and') {
      const driverExact = this.matches.get(matches.driver!)!.exact;
      for (const item of predicate.items) if (item !== matches.driver || !driverExact) this.check(query, item);
    } else if (!matches.exact) {
      this.check(query, predicate);
    }
  }

  /** Checks each entry read in page order (correlated on `e`); cheap per entry. */
  check(query: Knex.QueryBuilder, predicate: Predicate): void {
    const { db } = this;
    const valueOf = (fieldId: string) => db('entry_values as v').select(db.raw('1')).whereRaw('v.entry_id = e.id').where('v.field_id', fieldId);
    switch (predicate.kind) {
      case 'and':
        for (const item of predicate.items) query.where((inner) => this.check(inner, item));
        return;
      case 'or':
        query.where((group) => {
          for (const item of predicate.items) group.orWhere((inner) => this.check(inner, item));
        });
        return;
      case 'words':
        for (const word of predicate.words) whereEntryHasText(db, query, word);
        return;
      case 'text-contains':
        whereEntryHasText(db, query, predicate.text, predicate.field.id);
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
      case 'relationship':
        query.whereExists(this.links(predicate).whereRaw('l.entry_id = e.id'));
        return;
    }
  }

  /** A subquery of the entry ids a leaf matches, where an index can produce them. */
  private ids(predicate: Predicate): Knex.QueryBuilder | null {
    const { db } = this;
    const values = (fieldId: string) => db('entry_values').select('entry_id').where('field_id', fieldId);
    switch (predicate.kind) {
      case 'number':
        return whereAll(values(predicate.field.id), 'number_value', predicate.conditions);
      case 'date':
        return whereAll(values(predicate.field.id), 'date_value', predicate.conditions);
      case 'boolean':
        return values(predicate.field.id).where('bool_value', predicate.value);
      case 'relationship':
        return this.links(predicate).select('l.entry_id');
      default:
        return null;
    }
  }

  /** Links from an entry to an entry of the organization whose primary value is the one searched. */
  private links(predicate: Extract<Predicate, { kind: 'relationship' }>): Knex.QueryBuilder {
    const links = this.db('entry_links as l')
      .join('entries as t', 't.id', 'l.target_entry_id')
      .where('t.organization_id', this.type.organization_id)
      .where('t.primary_text', predicate.primary);
    if (predicate.field) links.where('l.field_id', predicate.field.id);
    return links;
  }
}

function whereAll(query: Knex.QueryBuilder, column: string, conditions: ReadonlyArray<{ operator: string; value: number | string }>): Knex.QueryBuilder {
  for (const { operator, value } of conditions) query.where(column, operator, value);
  return query;
}

/** The distinct entry ids of a subquery, or undefined when there are more than `limit` (or no subquery). */
async function list(db: Db, ids: Knex.QueryBuilder | null, limit: number): Promise<string[] | undefined> {
  if (!ids) return undefined;
  const listed = await readIdList<string>(db, ids.clone().distinct().limit(limit + 1), 'entry_id');
  return listed.length > limit ? undefined : listed;
}
