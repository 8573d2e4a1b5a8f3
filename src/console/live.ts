import type { Request } from 'express';

/**
 * True for public/live.js fetching the page again: it swaps in only the parts marked
 * `data-live-part`, so a route may skip reading what lies outside them.
 */
export function isLiveRefresh(req: Request): boolean {
  return req.get('x-live-refresh') === '1';
}
