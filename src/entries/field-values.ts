import { ValidationError } from '../http/errors.js';
import type { FieldRow, LinkRow, PostingKey, ValueRow } from './queries.js';
import { namesRealTime } from '../lib/clock.js';

export const messages = {
  fieldsNotObject: 'fields must be an object keyed by field name',
  unknownField: (name: string) => `Unknown field "${name}"`,
  notText: (name: string) => `Field "${name}" must be a string`,
  nulInText: (name: string) => `Field "${name}" must not contain U+0000`,
  notNumber: (name: string) => `Field "${name}" must be a number`,
  notBoolean: (name: string) => `Field "${name}" must be true or false`,
  notDate: (name: string) => `Field "${name}" must be a date (YYYY-MM-DD)`,
  notLinks: (name: string) => `Field "${name}" must be a list of entry ids`,
  primaryRequired: (name: string) => `The primary field "${name}" is required`,
};

export type FieldValue = string | number | boolean | string[];

/**
 * Values by field name, in an object without a prototype: field names are staff's text, and
 * on a plain object `constructor` reads Object's and assigning `__proto__` sets the prototype.
 */
export function fieldMap<T = FieldValue>(entries: Iterable<readonly [string, T]> = []): Record<string, T> {
  const map = Object.create(null) as Record<string, T>;
  for (const [name, value] of entries) map[name] = value;
  return map;
}

/** YYYY-MM-DD of a real calendar day. */
export function isDate(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  return namesRealTime(value, Date.parse(`${value}T00:00:00.000Z`));
}

/** Folds text for case-insensitive matching, the same way for stored values and queries. */
export function fold(text: string): string {
  return text.normalize('NFKC').toLowerCase();
}

/**
 * Checks values against the entry type's fields (keys matched case-insensitively, stored
 * under the field's own name) and returns them canonical. Null removes a value.
 */
export function normalizeValues(fields: readonly FieldRow[], input: unknown): Map<FieldRow, FieldValue | null> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new ValidationError(messages.fieldsNotObject);
  const byKey = new Map(fields.map((f) => [f.name_key, f]));
  const values = new Map<FieldRow, FieldValue | null>();
  for (const [key, raw] of Object.entries(input)) {
    const field = byKey.get(key.trim().toLowerCase());
    if (!field) throw new ValidationError(messages.unknownField(key));
    values.set(field, raw === null || raw === undefined ? null : checkValue(field, raw));
  }
  return values;
}

function checkValue(field: FieldRow, raw: unknown): FieldValue {
  switch (field.type) {
    case 'text':
      if (typeof raw !== 'string') throw new ValidationError(messages.notText(field.name));
      // No database column holds U+0000 (PostgreSQL refuses it), so neither does SQLite's.
      if (raw.includes('\0')) throw new ValidationError(messages.nulInText(field.name));
      return raw;
    case 'number':
      if (typeof raw !== 'number' || !Number.isFinite(raw)) throw new ValidationError(messages.notNumber(field.name));
      return raw;
    case 'boolean':
      if (typeof raw !== 'boolean') throw new ValidationError(messages.notBoolean(field.name));
      return raw;
    case 'date':
      if (typeof raw !== 'string' || !isDate(raw)) throw new ValidationError(messages.notDate(field.name));
      return raw;
    case 'relationship':
      if (!Array.isArray(raw) || !raw.every((id) => typeof id === 'string')) throw new ValidationError(messages.notLinks(field.name));
      return [...new Set(raw as string[])];
  }
}

/**
 * What joins an entry's text values into its row's `search_text`, which general text is first
 * looked for in. A text can hold it too (a value on several lines), so a text that does is
 * looked for in each value on its own: in the joined text it could span two values.
 */
export const TEXT_SEPARATOR = '\n';

/**
 * The rows that make an entry searchable: typed values and links (each carrying the entry's
 * `key`), folded text and primary value.
 */
export function searchRows(key: PostingKey, fields: readonly FieldRow[], values: Record<string, FieldValue>) {
  const valueRows: ValueRow[] = [];
  const links: LinkRow[] = [];
  const texts: string[] = [];
  let primaryText: string | null = null;
  for (const field of fields) {
    const value = Object.hasOwn(values, field.name) ? values[field.name] : undefined;
    if (value === undefined) continue;
    const row: ValueRow = { ...key, field_id: field.id, text_folded: null, number_value: null, bool_value: null, date_value: null };
    switch (field.type) {
      case 'text':
        row.text_folded = fold(value as string);
        texts.push(row.text_folded);
        if (field.is_primary) primaryText = row.text_folded.trim();
        break;
      case 'number':
        row.number_value = value as number;
        break;
      case 'boolean':
        row.bool_value = value as boolean;
        break;
      case 'date':
        row.date_value = value as string;
        break;
      case 'relationship':
        for (const target of value as string[]) links.push({ ...key, field_id: field.id, target_entry_id: target });
        continue;
    }
    valueRows.push(row);
  }
  return { valueRows, links, searchText: texts.join(TEXT_SEPARATOR), primaryText };
}
