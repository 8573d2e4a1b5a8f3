/** Where "now" comes from; tests pass a clock they can move. */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

/** ISO 8601 UTC with milliseconds, the only timestamp form stored and served. */
export function isoNow(clock: Clock): string {
  return clock().toISOString();
}
