/**
 * How entry values read in the console's tables (as `fmt` in the entries views). None of
 * these return HTML: the views escape what they get.
 */

const NUMBER = new Intl.NumberFormat('en', { maximumFractionDigits: 20 });
const DATE = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' });

/** Text longer than this is cut in a table cell, the whole text in its title. */
const CELL_TEXT = 80;
/** Links a relationship cell lists by name before saying how many more. */
const CELL_LINKS = 3;

/** `1234.5` → `1,234.5`. */
function number(value: unknown): string {
  return typeof value === 'number' ? NUMBER.format(value) : String(value);
}

/** `2026-11-23` → `23 Nov 2026` (a calendar day, no time zone of its own). */
function date(value: unknown): string {
  const text = String(value);
  const at = Date.parse(`${text}T00:00:00Z`);
  return /^\d{4}-\d{2}-\d{2}$/.test(text) && !Number.isNaN(at) ? DATE.format(at) : text;
}

/** A table cell's text: `shown`, and `full` when it had to be cut. */
function cellText(value: unknown): { shown: string; full: string | null } {
  const full = String(value);
  const flat = full.replace(/\s+/g, ' ').trim();
  return flat.length > CELL_TEXT ? { shown: `${flat.slice(0, CELL_TEXT - 1)}…`, full } : { shown: flat, full: flat === full ? null : full };
}

/** The ids a relationship cell names, and how many it leaves out. */
function cellLinks(value: unknown): { ids: string[]; more: number } {
  const ids = Array.isArray(value) ? (value as string[]) : [];
  return { ids: ids.slice(0, CELL_LINKS), more: Math.max(0, ids.length - CELL_LINKS) };
}

export const entryFormat = { number, date, cellText, cellLinks };
