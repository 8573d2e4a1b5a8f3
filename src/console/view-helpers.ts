import { describeStored } from '../schedules/cron.js';
import { zoneOrUtc } from '../lib/time-zones.js';
import { markdown } from './markdown.js';
import { TIMELINE_UNITS, traceTimeline } from './trace-timeline.js';
import { onceToken, type Flash } from './forms.js';

/**
 * Helpers every view gets (as `h`). Templates escape with `<%= %>`; none of these return
 * HTML, so nothing here needs `<%-`.
 */

const UNITS: Array<[string, number]> = [
  ['year', 365 * 86_400_000],
  ['month', 30 * 86_400_000],
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
  ['second', 1000],
];

/** "3 minutes ago", "just now"; the exact time goes in a title beside it. */
export function timeAgo(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—';
  const diff = now - Date.parse(iso);
  if (Math.abs(diff) < 5000) return 'just now';
  for (const [unit, ms] of UNITS) {
    const n = Math.floor(Math.abs(diff) / ms);
    if (n >= 1) return diff >= 0 ? `${n} ${unit}${n === 1 ? '' : 's'} ago` : `in ${n} ${unit}${n === 1 ? '' : 's'}`;
  }
  return 'just now';
}

/** Closer to now than this, a time reads as relative ("3 minutes ago"); further, as a date and time. */
export const RELATIVE_WITHIN_MS = 12 * 3_600_000;

const dateTimeFormats = new Map<string, Intl.DateTimeFormat>();

/** `24 Nov 2026, 09:30` as read in `timeZone` (made once per zone: a format costs far more to make than to use). */
function dateTime(at: Date, timeZone: string): string {
  let format = dateTimeFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-GB', {
      timeZone: zoneOrUtc(timeZone),
      day: 'numeric',
      month: 'short',
      year: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    dateTimeFormats.set(timeZone, format);
  }
  return format.format(at);
}

/**
 * How the console writes every time for its reader: relative when within twelve hours of
 * `now` ("3 minutes ago", "in 2 hours"), otherwise the date and time in the reader's zone
 * (`24 Nov 2026, 09:30`); a zone that names none reads as UTC. The exact UTC time goes in
 * the title beside it (`exactTime`).
 */
export function localTime(iso: string | null | undefined, timeZone: string | null | undefined, now: number | string = Date.now()): string {
  if (!iso) return '—';
  const at = Date.parse(iso);
  // Views are not type-checked: a `now` handed over as an ISO string must not turn every time into a date.
  const nowMs = typeof now === 'number' ? now : Date.parse(now);
  return Math.abs(nowMs - at) < RELATIVE_WITHIN_MS ? timeAgo(iso, nowMs) : dateTime(new Date(at), timeZone ?? 'UTC');
}

/** The exact time for a title attribute: `2026-11-21 09:30:00 UTC`. */
export function exactTime(iso: string | null | undefined): string {
  return iso ? `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC` : '';
}

/** The badge colour of a status or state, by what it means to staff. */
export function tone(status: string): 'ok' | 'busy' | 'wait' | 'bad' | 'idle' {
  switch (status) {
    case 'fulfilled':
    case 'done':
    case 'completed':
    case 'active':
    case 'submitted':
    case 'created':
    case 'enabled':
    case 'delivered':
      return 'ok';
    case 'accepted':
    case 'dispatched':
    case 'running':
    case 'in_progress':
    case 'queued':
    case 'open':
    case 'pending':
      return 'busy';
    case 'waiting':
    case 'paused':
    case 'invited':
      return 'wait';
    case 'failed':
    case 'refused':
      return 'bad';
    default:
      return 'idle';
  }
}

/** `in_progress` → `in progress`, `powered_off` → `powered off`. */
export function label(status: string): string {
  return status.replace(/_/g, ' ');
}

/** The first `n` characters of a text, with … when cut. */
export function truncate(text: string | null | undefined, n = 80): string {
  const value = (text ?? '').replace(/\s+/g, ' ').trim();
  return value.length > n ? `${value.slice(0, n - 1)}…` : value;
}

/** A search result's text around what was found: `match` as it stands in the text, and the text either side of it. */
export interface Snippet {
  before: string;
  match: string;
  after: string;
}

/**
 * The part of `text` around the first occurrence of `find` (any case; a run of spaces in
 * `find` matches any run of white space), up to `around` characters either side, cut at
 * white space where there is some, white space collapsed, a cut end marked "…". When
 * JavaScript's case folding does not find it where the database's did: the text's start,
 * with no match.
 */
export function snippet(text: string | null | undefined, find: string, around = 60): Snippet {
  const value = text ?? '';
  const pattern = find
    .trim()
    .split(/\s+/)
    .map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('\\s+');
  const found = pattern ? new RegExp(pattern, 'iu').exec(value) : null;
  if (!found) return { before: truncate(value, 2 * around), match: '', after: '' };
  const end = found.index + found[0].length;
  let from = wholeCharacterAt(value, Math.max(0, found.index - around));
  let to = wholeCharacterAt(value, Math.min(value.length, end + around));
  // Cut ends at white space where there is some, so no word shows in part.
  if (from > 0) from += value.slice(from, found.index).search(/\s/) + 1;
  if (to < value.length) to = end + Math.max(0, value.slice(end, to).search(/\s\S*$/));
  const collapse = (part: string) => part.replace(/\s+/g, ' ');
  return {
    before: (from > 0 ? '…' : '') + collapse(value.slice(from, found.index)).trimStart(),
    match: collapse(found[0]),
    after: collapse(value.slice(end, to)).trimEnd() + (to < value.length ? '…' : ''),
  };
}

/** `i`, or the index after it when `i` falls between the halves of a surrogate pair. */
function wholeCharacterAt(text: string, i: number): number {
  const code = text.charCodeAt(i);
  return code >= 0xdc00 && code <= 0xdfff ? i + 1 : i;
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** A query string from the current filters with some changed (undefined/empty drops a key). */
export function withQuery(base: Record<string, unknown>, changes: Record<string, unknown> = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries({ ...base, ...changes })) {
    if (value !== undefined && value !== null && value !== '' && value !== false) params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** A moment as read in an IANA zone: `Tue, 24 Nov 2026, 09:00:00 CET`. */
export function inZone(at: string | Date, timeZone: string): string {
  return new Intl.DateTimeFormat('en-GB', {
    timeZone,
    weekday: 'short',
    day: 'numeric',
    month: 'short',
    year: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
    timeZoneName: 'short',
  }).format(typeof at === 'string' ? new Date(at) : at);
}

/**
 * A field's value on a page a refused form came back to: as typed (the flash's), when that
 * form is this one, else as stored.
 */
function typed(flash: Flash | null, form: string, name: string, stored: string | number | null | undefined): string {
  return flash?.typed?.form === form ? (flash.typed.values[name] ?? '') : String(stored ?? '');
}

/** A checkbox's state likewise: a browser sends a box only when it is ticked. */
function typedChecked(flash: Flash | null, form: string, name: string, stored: boolean): boolean {
  return flash?.typed?.form === form ? flash.typed.values[name] !== undefined : stored;
}

export const viewHelpers = {
  typed,
  typedChecked,
  timeAgo,
  localTime,
  exactTime,
  tone,
  label,
  truncate,
  snippet,
  bytes,
  withQuery,
  inZone,
  describeSchedule: describeStored,
  markdown,
  onceToken,
  traceTimeline,
  TIMELINE_UNITS,
};
