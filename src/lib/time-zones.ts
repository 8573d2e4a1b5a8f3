/**
 * IANA time zones as the console uses them: a user's zone is any name the runtime's time
 * zone database knows (canonical or an alias such as `Asia/Calcutta`, which browsers still
 * report), stored as the runtime names it.
 */

const NAME = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+){0,2}$/;

/** The zone's name as the runtime knows it, or undefined when it names no zone (offsets such as `+01:00` are not zones). */
export function canonicalTimeZone(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > 64 || !NAME.test(value)) return undefined;
  try {
    return new Intl.DateTimeFormat('en-GB', { timeZone: value }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/** The zones to choose from: the runtime's list and UTC (which the list leaves out). */
export function timeZoneChoices(): string[] {
  return ['UTC', ...Intl.supportedValuesOf('timeZone').filter((zone) => zone !== 'UTC')];
}

/** The zone to write times in for a stored value: UTC when there is none or it no longer names a zone. */
export function zoneOrUtc(value: string | null | undefined): string {
  return canonicalTimeZone(value) ?? 'UTC';
}
