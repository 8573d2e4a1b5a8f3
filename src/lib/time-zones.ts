/**
 * IANA time zones as the console uses them: a user's zone is any name the runtime's time
 * zone database knows, kept as written in the runtime's list (`Europe/Zurich` for
 * `europe/zurich`), or as given when it is an alias the list leaves out (`Asia/Calcutta`,
 * which browsers still report).
 */

const NAME = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+){0,2}$/;

let listed: Map<string, string> | undefined;

/** The zone's name as the console keeps it, or undefined when it names no zone (offsets such as `+01:00` are not zones). */
export function canonicalTimeZone(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > 64 || !NAME.test(value)) return undefined;
  listed ??= new Map(timeZoneChoices().map((zone) => [zone.toLowerCase(), zone]));
  const known = listed.get(value.toLowerCase());
  if (known) return known;
  try {
    new Intl.DateTimeFormat('en-GB', { timeZone: value });
    return value;
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
