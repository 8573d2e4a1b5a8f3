import type { Knex } from 'knex';
import type { Db } from '../../db/knex.js';
import { readIdList, whereIdIn } from '../../db/id-list.js';

/**
 * The one place that decides how "contains this text" becomes SQL. Text is folded to lower
 * case when stored and when searched (see `fold`). Pieces of 3 or more characters can be
 * looked up in the FTS5 trigram index over text values (migration 20261121000700;
 * SQLite-specific, as is only this module); every piece can be checked with LIKE.
 */

/**
 * The entries having a text value (in field `fieldId`, or any) that may contain `foldedText`,
 * when there are at most `limit`; undefined when there are more, or the index cannot tell.
 * A superset: callers check the exact text with `whereEntryHasText`.
 *
 * A trigram lookup costs as much as its most common trigram, so the text is looked up a word
 * at a time (measured at 100,000 values: "city 0042" as a phrase 2.2 ms, "0042" alone
 * 0.2 ms), rarest-looking first (with digits, then longer), stopping at the first word whose
 * entries fit in `limit`.
 */
export async function listEntriesWithText(db: Db, foldedText: string, limit: number, fieldId?: string): Promise<string[] | undefined> {
  const words = foldedText
    .split(/\s+/)
    .filter(indexable)
    .sort((a, b) => Number(/\d/.test(b)) - Number(/\d/.test(a)) || [...b].length - [...a].length);
  for (const word of words) {
    // The index alone first (no join): a word in more values than `limit` is too common to
    // list; this only decides the plan, results are the same either way.
    // One string of ids from SQLite rather than a row object per id.
    const found = db('entry_values_fts').select('rowid').whereRaw('entry_values_fts match ?', [phrase(word)]).limit(limit + 1);
    const rowids = await readIdList<number>(db, found, 'rowid');
    if (rowids.length > limit) continue;
    const values = db('entry_values').distinct('entry_id');
    whereIdIn(values, 'id', rowids);
    if (fieldId) values.where('field_id', fieldId);
    return readIdList<string>(db, values, 'entry_id');
  }
  return undefined;
}

/** The trigram index needs 3 characters; FTS5's query parser stops at a NUL, so no control characters either. */
function indexable(word: string): boolean {
  return [...word].length >= 3 && !/[\u0000-\u001f]/.test(word);
}

/** Checks, for the entry `e` at hand, that its text (field `fieldId`, or any) contains `foldedText`. */
export function whereEntryHasText(db: Db, query: Knex.QueryBuilder, foldedText: string, fieldId?: string): void {
  if (!fieldId) {
    query.whereRaw(`e.search_text like ? escape '\\'`, [containsPattern(foldedText)]);
    return;
  }
  query.whereExists(
    db('entry_values as v')
      .select(db.raw('1'))
      .whereRaw('v.entry_id = e.id')
      .where('v.field_id', fieldId)
      .whereRaw(`v.text_folded like ? escape '\\'`, [containsPattern(foldedText)]),
  );
}

/** An FTS5 phrase: the text in double quotes (doubled inside), so no character is query syntax. */
function phrase(text: string): string {
  return `"${text.replace(/"/g, '""')}"`;
}

/** `%text%` with LIKE's own wildcards escaped, so `50%` and `a_b` mean themselves. */
function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
