import type { Request } from 'express';
import { DRAFT_FLUSH_MS } from '../agents/reply-writer.js';

/**
 * True for public/live.js fetching the page again: it swaps in only the parts marked
 * `data-live-part`, so a route may skip reading what lies outside them.
 */
export function isLiveRefresh(req: Request): boolean {
  return req.get('x-live-refresh') === '1';
}

/**
 * How often a live page refreshes while it shows an answer being written (undefined: at the
 * usual pace): as often as the answer is stored, so staff read it as closely behind the model.
 */
export function writingEvery(rows: ReadonlyArray<{ partial: boolean | number }>): number | undefined {
  return rows.some((row) => row.partial) ? DRAFT_FLUSH_MS : undefined;
}
