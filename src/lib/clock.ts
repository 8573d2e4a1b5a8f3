/** Where "now" comes from; tests pass a clock they can move. */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

/** ISO 8601 UTC with milliseconds, the only timestamp form stored and served. */
export function isoNow(clock: Clock): string {
  return clock().toISOString();
}

/** Now, or 1 ms after `previous` if the clock has not moved past it: every move changes updated_at. */
export function laterThan(clock: Clock, previous: string): string {
  return atOrAfter(clock(), previous);
}

/** `now`, or 1 ms after `previous` when `now` is not later. */
export function atOrAfter(now: Date, previous: string): string {
  return new Date(Math.max(now.getTime(), Date.parse(previous) + 1)).toISOString();
}

/**
 * Whether `ms`, what Date.parse made of `text` (a UTC date, or date and time), is the very time
 * the text names: Date rolls a day or time that does not exist (2026-02-30) over into the next.
 */
export function namesRealTime(text: string, ms: number): boolean {
  return !Number.isNaN(ms) && new Date(ms).toISOString().startsWith(text.replace(/Z$/, ''));
}
