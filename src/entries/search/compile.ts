import type { Knex } from 'knex';
import type { Db } from '../../db/knex.js';
import { BadRequestError } from '../../http/errors.js';
import type { EntryTypeWithFields } from '../entry-type-service.js';
import { SearchSyntaxError, parseSearch } from './parser.js';
import { type Predicate, resolveSearch } from './resolve.js';
import { whereTextContains } from './text-match.js';

export const messages = {
  invalidQuery: (reason: string) => `Invalid search query: ${reason}`,
  tooLong: 'query is longer than 2000 characters',
};

const MAX_QUERY_LENGTH = 2000;

/**
 * Turns `q` into a filter on the entries query (alias `e`), or undefined for no filter.
 * Every value travels as a bound parameter; nothing from `q` is spliced into SQL.
 * Throws 400 `Invalid search query: <reason>`.
 */
export function compileSearch(db: Db, type: EntryTypeWithFields, q: string): ((query: Knex.QueryBuilder) => void) | undefined {
  if (q.length > MAX_QUERY_LENGTH) throw new BadRequestError(messages.invalidQuery(messages.tooLong));
  let predicate: Predicate;
  try {
    const ast = parseSearch(q);
    if (!ast) return undefined;
    predicate = resolveSearch(ast, type.fields);
  } catch (err) {
    if (err instanceof SearchSyntaxError) throw new BadRequestError(messages.invalidQuery(err.message));
    throw err;
  }
  return (query) => {
    apply(db, type, query, predicate);
  };
}

/** Entry ids whose value of one field passes `where` (entry_values, indexed by field). */
function valuesOf(db: Db, fieldId: string, where: (query: Knex.QueryBuilder) => void): Knex.QueryBuilder {
  return db('entry_values').select('entry_id').where('field_id', fieldId).where(where);
}

function whereAll(query: Knex.QueryBuilder, column: string, conditions: ReadonlyArray<{ operator: string; value: number | string }>): void {
  for (const { operator, value } of conditions) query.where(column, operator, value);
}

function apply(db: Db, type: EntryTypeWithFields, query: Knex.QueryBuilder, predicate: Predicate): void {
  switch (predicate.kind) {
    case 'and':
      for (const item of predicate.items) query.where((inner) => apply(db, type, inner, item));
      return;
    case 'or':
      query.where((group) => {
        for (const item of predicate.items) group.orWhere((inner) => apply(db, type, inner, item));
      });
      return;
    case 'words':
      for (const word of predicate.words) whereTextContains(db, query, word);
      return;
    case 'text-contains':
      whereTextContains(db, query, predicate.text, predicate.field.id);
      return;
    case 'number':
      query.whereIn('e.id', valuesOf(db, predicate.field.id, (v) => whereAll(v, 'number_value', predicate.conditions)));
      return;
    case 'boolean':
      query.whereIn('e.id', valuesOf(db, predicate.field.id, (v) => v.where('bool_value', predicate.value)));
      return;
    case 'date':
      query.whereIn('e.id', valuesOf(db, predicate.field.id, (v) => whereAll(v, 'date_value', predicate.conditions)));
      return;
    case 'timestamp':
      query.where(`e.${predicate.column}`, predicate.operator, predicate.value);
      if (predicate.before) query.where(`e.${predicate.column}`, '<', predicate.before);
      return;
    case 'relationship': {
      const links = db('entry_links as l')
        .join('entries as t', 't.id', 'l.target_entry_id')
        .select('l.entry_id')
        .where('t.organization_id', type.organization_id)
        .where('t.primary_text', predicate.primary);
      if (predicate.field) links.where('l.field_id', predicate.field.id);
      query.whereIn('e.id', links);
      return;
    }
  }
}
