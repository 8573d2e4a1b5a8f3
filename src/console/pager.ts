import type { Request } from 'express';
import type { KeysetPage, KeyValue, PageAt } from '../db/keyset.js';
import { decodeCursor, encodeCursor } from '../http/cursor.js';
import { BadRequestError } from '../http/errors.js';
import { withQuery } from './view-helpers.js';

/** How a list's cursors are written in its links: the page's edge keys as opaque text. */
export interface CursorCodec {
  encode(key: readonly KeyValue[]): string;
  /** The key a `before=`/`after=` value names; 400 for anything this list could not have made. */
  decode(cursor: unknown): KeyValue[];
}

/** Lists ordered by a time and an id (`created_at, id`): the API's cursor form (http/cursor.ts). */
export function timeAndIdCursor(isId: (id: string) => boolean): CursorCodec {
  return {
    encode: ([at, id]) => encodeCursor({ createdAt: String(at), id: String(id) }),
    decode: (cursor) => {
      const { createdAt, id } = decodeCursor(cursor, isId);
      return [createdAt, id];
    },
  };
}

/** Lists ordered by a serial id alone (the audit log). */
export const serialCursor: CursorCodec = {
  encode: ([id]) => String(id),
  decode: (cursor) => {
    if (typeof cursor !== 'string' || !/^\d{1,15}$/.test(cursor)) throw new BadRequestError('Invalid cursor format');
    return [Number(cursor)];
  },
};

/** The page a request asks for: `?after=` (newer) wins over `?before=` (older); neither is the first page. */
export function pageAt(req: Request, codec: CursorCodec): PageAt {
  if (req.query.after !== undefined) return { after: codec.decode(req.query.after) };
  if (req.query.before !== undefined) return { before: codec.decode(req.query.before) };
  return {};
}

/** What views/partials/pager.ejs shows. */
export interface Pager {
  /** Which way the list runs: "Newest first". */
  order: string;
  /** "1,234 receipts matching these filters", "more than 10,000 …", or null when not counted. */
  total: string | null;
  firstHref: string | null;
  previousHref: string | null;
  nextHref: string | null;
}

/**
 * The links and words of a page: first, previous (newer) and next (older) keep the list's
 * filters; the total names what it counts (`noun`, and `scope`: "matching these filters").
 */
export function pagerOf(
  page: KeysetPage<unknown>,
  options: { path: string; filters: Record<string, unknown>; codec: CursorCodec; noun: [string, string]; scope: string; order?: string },
): Pager {
  const href = (changes: Record<string, unknown> = {}) => `${options.path}${withQuery(options.filters, changes)}`;
  return {
    order: options.order ?? 'Newest first',
    total: page.total && totalText(page.total, options.noun, options.scope),
    firstHref: page.atStart ? null : href(),
    previousHref: page.newer ? href({ after: options.codec.encode(page.newer) }) : null,
    nextHref: page.older ? href({ before: options.codec.encode(page.older) }) : null,
  };
}

/** "1 receipt in all", "1,234 receipts matching these filters", "more than 10,000 receipts …". */
export function totalText(total: { count: number; more: boolean }, [one, many]: [string, string], scope: string): string {
  const n = total.count.toLocaleString('en');
  const counted = total.more ? `more than ${n} ${many}` : `${n} ${total.count === 1 ? one : many}`;
  return scope ? `${counted} ${scope}` : counted;
}

/** What a list's total counts: "matching these filters" when any is set, else "in all". */
export function filtersScope(filters: Record<string, unknown>): string {
  return Object.values(filters).some((value) => value !== undefined && value !== null && value !== '' && value !== false) ? 'matching these filters' : 'in all';
}

/** How many pages back a forward-only list remembers (`trail=`); the oldest are dropped first. */
export const TRAIL_MAX = 30;

/**
 * A pager for a list that reads forwards only (the entries list pages with the API's
 * `after` cursor, whose search engine reads in one direction): the cursors that led to this
 * page travel in the links (`trail=`, `~`-separated; an empty one is the first page), so
 * Previous goes back the way it came.
 */
export function trailPagerOf(options: { path: string; filters: Record<string, unknown>; after?: unknown; trail?: unknown; next: string | null; order: string }): Pager {
  const after = typeof options.after === 'string' && options.after !== '' ? options.after : null;
  const trail = after && typeof options.trail === 'string' ? options.trail.split('~').slice(-TRAIL_MAX) : [];
  const href = (changes: Record<string, unknown>) => `${options.path}${withQuery(options.filters, changes)}`;
  // The pages before this one, newest last; page 2's only predecessor is the first page.
  const back = after ? (trail.length ? trail : ['']) : null;
  return {
    order: options.order,
    total: null,
    firstHref: after ? href({}) : null,
    previousHref: back ? href({ after: back.at(-1) || undefined, trail: back.slice(0, -1).join('~') || undefined }) : null,
    nextHref: options.next ? href({ after: options.next, trail: after ? [...trail, after].slice(-TRAIL_MAX).join('~') : undefined }) : null,
  };
}
