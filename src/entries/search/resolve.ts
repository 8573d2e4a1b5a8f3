import { fold, isDate } from '../field-values.js';
import type { FieldRow } from '../queries.js';
import { SearchSyntaxError, type ComparisonOperator, type SearchNode, type TermNode } from './parser.js';

/** SQL comparison for a search operator (`:` means equality where it is not "contains"). */
export type SqlOperator = '=' | '>' | '>=' | '<' | '<=';

/** What one term asks of an entry, bound to the entry type's fields and typed. */
export type Predicate =
  | { kind: 'and' | 'or'; items: Predicate[] }
  | { kind: 'words'; words: string[] }
  | { kind: 'text-contains'; field: FieldRow; text: string }
  | { kind: 'number'; field: FieldRow; conditions: Array<{ operator: SqlOperator; value: number }> }
  | { kind: 'boolean'; field: FieldRow; value: boolean }
  | { kind: 'date'; field: FieldRow; conditions: Array<{ operator: SqlOperator; value: string }> }
  | { kind: 'timestamp'; column: 'created_at' | 'updated_at'; operator: SqlOperator; value: string; before?: string }
  | { kind: 'relationship'; field?: FieldRow; primary: string }
  /** Matches nothing: an `&&` that asks one boolean field for both values, or text no value can hold. */
  | { kind: 'none' };

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/;
const BOOLEAN_WORDS = new Set(['true', 'yes', 'false', 'no']);
const TRUE_WORDS = new Set(['true', 'yes']);

/**
 * Binds a parsed query to an entry type. A `name op value` term is field-specific when
 * `name` is (case-insensitively) one of its fields, `created_at`, `updated_at` or
 * `relationship`; any other term is general text. Throws SearchSyntaxError for terms that
 * cannot mean anything (a comparison on a text field, a number field compared with text).
 */
export function resolveSearch(node: SearchNode, fields: readonly FieldRow[]): Predicate {
  if (node.kind !== 'term') {
    const items = node.items.map((item) => resolveSearch(item, fields));
    return node.kind === 'and' ? mergeSameField(items) : { kind: 'or', items };
  }
  return possible(resolveTerm(node, fields));
}

/**
 * "The primary field's value contains `text`, in any case": what the term
 * `"<primary>":"<text>"` asks, for any text, double quotes included (the console's search box).
 */
export function primaryContains(fields: readonly FieldRow[], text: string): Predicate {
  const field = fields.find((f) => f.is_primary)!;
  return possible({ kind: 'text-contains', field, text: fold(text) });
}

/** The predicate, or `none` when it looks for text no value holds. */
function possible(predicate: Predicate): Predicate {
  // Stored text never holds U+0000 (field-values.ts refuses it; PostgreSQL could not store it).
  return textsOf(predicate).some((text) => text.includes('\0')) ? { kind: 'none' } : predicate;
}

/** The texts a term looks for. */
function textsOf(predicate: Predicate): string[] {
  if (predicate.kind === 'words') return predicate.words;
  if (predicate.kind === 'text-contains') return [predicate.text];
  if (predicate.kind === 'relationship') return [predicate.primary];
  return [];
}

function resolveTerm(node: TermNode, fields: readonly FieldRow[]): Predicate {
  if (node.name === undefined || node.operator === undefined || node.value === undefined) return words(node);

  const key = node.name.toLowerCase();
  const field = fields.find((f) => f.name_key === key);
  if (field) return fieldTerm(node, field, node.operator, node.value);
  if (key === 'created_at' || key === 'updated_at') return timestampTerm(node, key, node.operator, node.value);
  if (key === 'relationship') {
    requireColon(node, 'relationship');
    return { kind: 'relationship', primary: requireValue(node, fold(node.value).trim()) };
  }
  return words(node);
}

/** General text: every word must occur (a quoted term is one phrase). */
function words(node: TermNode): Predicate {
  const text = fold(node.text);
  // `""` would look for the empty text, which every value holds.
  if (node.quoted && text.trim() === '') fail(node, '"" needs text between the quotes');
  const list = node.quoted ? [text] : withoutImplied(text.split(/\s+/).filter(Boolean));
  return { kind: 'words', words: list };
}

/**
 * The words without repeats and without those inside another of them: a text that holds
 * `acme` holds `acm` too, so checking both asks nothing more (`x x x …` is one check).
 */
function withoutImplied(list: string[]): string[] {
  const distinct = [...new Set(list)];
  return distinct.filter((word) => !distinct.some((other) => other !== word && other.includes(word)));
}

function fieldTerm(node: TermNode, field: FieldRow, operator: ComparisonOperator, value: string): Predicate {
  switch (field.type) {
    case 'text':
      requireColon(node, `${field.name} is a text field:`);
      return { kind: 'text-contains', field, text: requireValue(node, fold(value)) };
    case 'relationship':
      requireColon(node, `${field.name} is a relationship field:`);
      return { kind: 'relationship', field, primary: requireValue(node, fold(value).trim()) };
    case 'boolean': {
      requireColon(node, `${field.name} is a boolean field:`);
      const word = value.toLowerCase();
      if (!BOOLEAN_WORDS.has(word)) fail(node, `${field.name} is a boolean field; "${value}" is not true, false, yes or no`);
      return { kind: 'boolean', field, value: TRUE_WORDS.has(word) };
    }
    case 'number':
      if (!NUMBER.test(value)) fail(node, `${field.name} is a number field; "${value}" is not a number`);
      return { kind: 'number', field, conditions: [{ operator: sqlOperator(operator), value: Number(value) }] };
    case 'date':
      if (!isDate(value)) fail(node, `${field.name} is a date field; "${value}" is not a date (YYYY-MM-DD)`);
      return { kind: 'date', field, conditions: [{ operator: sqlOperator(operator), value }] };
  }
}

/** created_at / updated_at against a day (its 00:00:00.000Z; `:` means that whole day) or a full timestamp. */
function timestampTerm(node: TermNode, column: 'created_at' | 'updated_at', operator: ComparisonOperator, value: string): Predicate {
  if (isDate(value)) {
    const start = `${value}T00:00:00.000Z`;
    if (operator === ':') {
      const next = new Date(Date.parse(start) + 86_400_000).toISOString();
      return { kind: 'timestamp', column, operator: '>=', value: start, before: next };
    }
    return { kind: 'timestamp', column, operator: sqlOperator(operator), value: start };
  }
  if (TIMESTAMP.test(value) && isDate(value.slice(0, 10)) && !Number.isNaN(Date.parse(value))) {
    return { kind: 'timestamp', column, operator: sqlOperator(operator), value: new Date(value).toISOString() };
  }
  return fail(node, `${column} needs a date (YYYY-MM-DD) or an ISO 8601 timestamp, not "${value}"`);
}

/**
 * Within one `&&`, comparisons on the same number or date field become one range, so
 * `Score>=40 && Score<41` reads one stretch of the field's index instead of two large ones;
 * a boolean field asked twice is asked once, or for both values matches nothing (each alone
 * can match most entries, so checking both on every entry would read them all).
 */
function mergeSameField(items: Predicate[]): Predicate {
  const merged: Predicate[] = [];
  const ranges = new Map<string, Extract<Predicate, { kind: 'number' | 'date' }>>();
  const booleans = new Map<string, boolean>();
  for (const item of items) {
    if (item.kind === 'boolean') {
      const asked = booleans.get(item.field.id);
      if (asked === undefined) {
        booleans.set(item.field.id, item.value);
        merged.push(item);
      } else if (asked !== item.value) {
        return { kind: 'none' };
      }
      continue;
    }
    if (item.kind !== 'number' && item.kind !== 'date') {
      merged.push(item);
      continue;
    }
    const existing = ranges.get(item.field.id);
    if (existing) {
      (existing.conditions as Array<{ operator: SqlOperator; value: number | string }>).push(...item.conditions);
    } else {
      const copy = { ...item, conditions: [...item.conditions] } as typeof item;
      ranges.set(item.field.id, copy);
      merged.push(copy);
    }
  }
  return merged.length === 1 ? merged[0]! : { kind: 'and', items: merged };
}

function sqlOperator(operator: ComparisonOperator): SqlOperator {
  return operator === ':' ? '=' : operator;
}

function requireColon(node: TermNode, what: string): void {
  if (node.operator !== ':') fail(node, `${what} "${node.operator}" does not apply; use ":"`);
}

function requireValue(node: TermNode, value: string): string {
  if (value === '') fail(node, `"${node.name}:" needs a value`);
  return value;
}

function fail(node: TermNode, reason: string): never {
  throw new SearchSyntaxError(reason, node.position);
}
