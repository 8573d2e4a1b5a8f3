import { BadRequestError } from './errors.js';

export const messages = { invalidLimit: 'Invalid limit' };

/**
 * The `limit` query parameter: absent → the default, above the maximum → clamped, anything
 * but a positive whole number → 400 `Invalid limit`.
 */
export function parsePageLimit(value: unknown, { fallback, max }: { fallback: number; max: number }): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !/^\d+$/.test(value)) throw new BadRequestError(messages.invalidLimit);
  const limit = Number(value);
  if (limit < 1) throw new BadRequestError(messages.invalidLimit);
  return Math.min(limit, max);
}
