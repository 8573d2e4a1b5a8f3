import { BadRequestError } from './errors.js';

export const messages = {
  invalidLimit: 'Invalid limit',
  invalidFlag: (name: string) => `Invalid ${name}`,
};

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

/** A boolean query parameter: `true`/`false`/`1`/`0`, absent → false, else 400 `Invalid <name>`. */
export function parseFlag(value: unknown, name: string): boolean {
  if (value === undefined) return false;
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new BadRequestError(messages.invalidFlag(name));
}
