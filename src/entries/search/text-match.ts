import type { Knex } from 'knex';
import type { Db } from '../../db/knex.js';

/**
 * The one place that decides how "contains this text" becomes SQL. Text is folded to lower
 * case when stored and when searched (see `fold`). Pieces of 3 or more characters use the
 * FTS5 trigram index over text values (migration 20261121000700; SQLite-specific, as is
 * only this module); shorter ones, which that index cannot serve, use LIKE with escaped
 * wildcards.
 */

/** Entries having a text value that contains `foldedText`: in field `fieldId`, or in any text field. */
export function whereTextContains(db: Db, query: Knex.QueryBuilder, foldedText: string, fieldId?: string): void {
  if (usesTextIndex(foldedText)) {
    const matches = db('entry_values_fts as f')
      .join('entry_values as v', 'v.id', 'f.rowid')
      .select('v.entry_id')
      .whereRaw('entry_values_fts match ?', [phrase(foldedText)]);
    if (fieldId) matches.where('v.field_id', fieldId);
    query.whereIn('e.id', matches);
  } else if (fieldId) {
    query.whereIn('e.id', db('entry_values').select('entry_id').where('field_id', fieldId).whereRaw(`text_folded like ? escape '\\'`, [containsPattern(foldedText)]));
  } else {
    query.whereRaw(`e.search_text like ? escape '\\'`, [containsPattern(foldedText)]);
  }
}

/**
 * The trigram index needs 3 characters; and FTS5's query parser stops at a NUL, so text with
 * control characters goes the LIKE way, where it is just a bound value.
 */
function usesTextIndex(text: string): boolean {
  return [...text].length >= 3 && !/[\u0000-\u001f]/.test(text);
}

/** An FTS5 phrase: the text in double quotes (doubled inside), so no character is query syntax. */
function phrase(text: string): string {
  return `"${text.replace(/"/g, '""')}"`;
}

/** `%text%` with LIKE's own wildcards escaped, so `50%` and `a_b` mean themselves. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
