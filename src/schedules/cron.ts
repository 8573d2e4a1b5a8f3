import { CronExpressionParser, type CronExpression } from 'cron-parser';
import cronstrue from 'cronstrue';
import { ValidationError } from '../http/errors.js';

/** The longest expression kept: its column's size. */
const MAX_CRON = 200;

export const messages = {
  fieldCount: 'Cron expression must have 5 fields, or 6 with seconds first',
  tooLong: `Cron expression must be at most ${MAX_CRON} characters`,
  invalidCron: (reason: string) => `Invalid cron expression: ${reason}`,
  notInWords: (reason: string) => `Cron expression is not supported: ${reason}`,
  /** What lists say of a stored expression the product cannot compute or put into words. */
  invalidStored: 'invalid expression',
  unknownZone: (zone: string) => `Unknown time zone: ${zone} (use an IANA name such as Europe/Berlin)`,
};

/** A cron expression in an IANA zone, parsed and stepped by cron-parser (which handles daylight-saving changes). */
export interface CronSchedule {
  cron: string;
  timezone: string;
}

/**
 * The expression with single spaces, or a 422 naming what is wrong with it or the zone. An
 * expression must both step (forward and back, as the scheduler does) and go into words (as
 * every page shows it): cron-parser takes some syntax cronstrue does not (`H`), and the
 * reverse (`W`), so either refusing is a refusal.
 */
export function checkCron({ cron, timezone }: CronSchedule): CronSchedule {
  const fields = cron.trim().split(/\s+/).filter(Boolean);
  if (fields.length !== 5 && fields.length !== 6) throw new ValidationError(messages.fieldCount);
  const zone = canonicalZone(timezone);
  if (!zone) throw new ValidationError(messages.unknownZone(timezone));
  const normalized = fields.join(' ');
  if (normalized.length > MAX_CRON) throw new ValidationError(messages.tooLong);
  try {
    // Stepping forward is what firing needs (latestFireAtOrBefore steps forward too).
    CronExpressionParser.parse(normalized, { tz: zone, strict: false }).next();
  } catch (err) {
    throw new ValidationError(messages.invalidCron((err as Error).message));
  }
  try {
    describeCron(normalized);
  } catch (err) {
    // cronstrue throws strings such as "Error: Expression contains invalid values: 'H'".
    throw new ValidationError(messages.notInWords(String(err instanceof Error ? err.message : err).replace(/^Error: /, '')));
  }
  return { cron: normalized, timezone: zone };
}

/** The zone's canonical IANA name ("utc" → "UTC"), or undefined for a name Intl does not know. */
function canonicalZone(zone: string): string | undefined {
  if (!/^[A-Za-z0-9_+\-/]{1,64}$/.test(zone)) return undefined;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

function parse({ cron, timezone }: CronSchedule, currentDate: Date): CronExpression {
  return CronExpressionParser.parse(cron, { tz: timezone, currentDate });
}

/** The first fire time strictly after `after`. */
export function nextFireAfter(schedule: CronSchedule, after: Date): Date {
  return parse(schedule, after).next().toDate();
}

/** The next `count` fire times strictly after `after`. */
export function nextFires(schedule: CronSchedule, after: Date, count: number): Date[] {
  const expression = parse(schedule, after);
  return Array.from({ length: count }, () => expression.next().toDate());
}

/** Fire times `latestFireAtOrBefore` steps through at most: a schedule every second, down for a day. */
const MAX_STEPS = 100_000;

/**
 * The latest fire time at or before `at`, as `next()` steps (it made the schedule's due time).
 * cron-parser's `prev()` skips a fire that a daylight-saving change moved (a daily 02:30 fires
 * at 03:30 on the spring-forward day) and cannot step back at all near Australia/Lord_Howe's
 * half-hour changes, so it only gives a start from which `next()` steps forward; `since`, a
 * fire time known to have come (the due time), is the start when `prev()` gives an earlier one or none.
 */
export function latestFireAtOrBefore(schedule: CronSchedule, at: Date, since?: Date): Date {
  let start: Date | undefined;
  try {
    start = parse(schedule, new Date(at.getTime() + 1))
      .prev()
      .toDate();
  } catch (err) {
    if (since === undefined) throw err;
  }
  if (since !== undefined && since <= at && (start === undefined || start < since)) start = since;
  if (start === undefined) throw new Error(`no fire time at or before ${at.toISOString()}`);
  const expression = parse(schedule, start);
  let latest = start;
  for (let step = 0; step < MAX_STEPS; step++) {
    const next = expression.next().toDate();
    if (next > at) break;
    latest = next;
  }
  return latest;
}

/** The expression in words ("At 09:00, Monday through Friday"). */
export function describeCron(cron: string): string {
  return cronstrue.toString(cron, { use24HourTimeFormat: true, verbose: false });
}

/**
 * A stored schedule's expression in words, or "invalid expression" when it cannot be computed
 * or put into words (one saved before these checks, or written straight into the database):
 * pages and the CLI list such a schedule instead of failing.
 */
export function describeStored(schedule: CronSchedule): string {
  try {
    return describeCron(checkCron(schedule).cron);
  } catch {
    return messages.invalidStored;
  }
}
