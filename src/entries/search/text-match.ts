import type { Knex } from 'knex';
import type { Db } from '../../db/knex.js';
import { dialectOf } from '../../db/dialect.js';
import { RememberedCounts } from './remembered-counts.js';
import { containsPattern, textIndexOf } from './text-index.js';

/**
 * The one place that decides how "contains this text" becomes SQL. Text is folded to lower
 * case when stored and when searched (see `fold`). Text values are indexed by trigrams
 * (text-index.ts: FTS5 on SQLite, pg_trgm on PostgreSQL): the index says which values hold
 * all of some trigrams, and LIKE then checks the text itself.
 *
 * A trigram lookup costs as much as its trigrams' postings, so one that includes a common
 * trigram ("cit", in every city) costs many times one of rare trigrams only: a text asks only
 * for its rarest trigrams, found from the estimates of `TrigramStats`.
 */

/** How a text is looked up: its rarest trigrams, and about how many values hold them all. */
export interface TextLookup {
  trigrams: string[];
  /** About how many values hold all the trigrams: an upper bound on the values that contain the text. */
  estimate: number;
}

/** Trigrams this close in rarity to the rarest are asked for too: each one read narrows what LIKE must check. */
const RARITY_SPREAD = 4;
const MAX_TRIGRAMS = 4;
/**
 * Trigrams of one text estimated at the most, spread over it: each estimate is a query,
 * and a long text of trigrams never seen before would otherwise cost one per character.
 */
const MAX_ESTIMATED = 8;

/**
 * About how many text values hold some trigrams, remembered for a while. Each estimate reads
 * at most `sample` postings, in rowid order: fewer means that is the count; otherwise the
 * `sample`-th posting's place in the rowid range says how dense they are (reading a sample is
 * cheap, while counting all of a common trigram's postings costs many times more, and grows
 * with the number of entries). The estimates only choose a plan (which trigrams to ask for,
 * whether to list matches or read in page order), never the results: stale or skewed ones
 * (values of a trigram bunched in time) cost speed at most.
 */
export class TrigramStats {
  private readonly remembered: RememberedCounts;

  constructor(
    private readonly db: Db,
    private readonly options: { sample: number; ttlMs: number; maxEntries: number; now?: () => number },
  ) {
    this.remembered = new RememberedCounts(options);
  }

  /** About how many values hold all these trigrams. */
  async estimate(trigrams: readonly string[]): Promise<number> {
    // No trigram holds a NUL (see trigramsOf), so the key is unambiguous.
    return this.remembered.get(trigrams.join('\u0000'), async () => {
      const { sample } = this.options;
      const postings = textIndexOf(this.db).firstValuesHolding(this.db, trigrams, sample);
      const read = (await this.db.from(postings.as('p')).first(this.db.raw('count(*) as n, max(p.value_id) as last'))) as { n: number; last: number | null };
      if (Number(read.n) < sample) return Number(read.n);
      // Two subqueries: SQLite answers a lone min() or max() from the index, both together by a scan.
      const range = (await this.db.first(this.db.raw('(select min(id) from entry_values) as first, (select max(id) from entry_values) as last'))) as {
        first: number;
        last: number;
      };
      return Math.round((sample * (range.last - range.first + 1)) / (read.last! - range.first + 1));
    });
  }

  /**
   * How to look `foldedText` up in the index; undefined when it has no trigram the index can
   * take. The chosen trigrams are estimated together too, as a text can be much rarer than
   * each of its trigrams ("0042": far fewer values hold both "004" and "042" than "004").
   */
  async lookup(foldedText: string): Promise<TextLookup | undefined> {
    const all = trigramsOf(foldedText);
    if (all.length === 0) return undefined;
    const step = Math.max(1, all.length / MAX_ESTIMATED);
    const trigrams = all.length <= MAX_ESTIMATED ? all : Array.from({ length: MAX_ESTIMATED }, (_, i) => all[Math.floor(i * step)]!);
    const estimated = await Promise.all(trigrams.map(async (trigram) => ({ trigram, estimate: await this.estimate([trigram]) })));
    estimated.sort((a, b) => a.estimate - b.estimate);
    const rarest = estimated[0]!.estimate;
    const chosen = estimated
      .filter((e, i) => i === 0 || e.estimate <= rarest * RARITY_SPREAD)
      .slice(0, MAX_TRIGRAMS)
      .map((e) => e.trigram);
    return { trigrams: chosen, estimate: chosen.length > 1 ? await this.estimate(chosen) : rarest };
  }
}

/**
 * The distinct trigrams of a text, as the tokenizer makes them (three characters each).
 * Trigrams with control characters are left out: FTS5's query parser stops at a NUL.
 */
export function trigramsOf(foldedText: string): string[] {
  const chars = [...foldedText];
  const trigrams = new Set<string>();
  for (let i = 0; i + 3 <= chars.length; i++) {
    const trigram = chars.slice(i, i + 3).join('');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: trigrams with a control character are what it leaves out
    if (!/[\u0000-\u001f]/.test(trigram)) trigrams.add(trigram);
  }
  return [...trigrams];
}

/**
 * Restricts value rows (alias `alias`) to those whose text contains `foldedText`: the index
 * narrows them to values holding the looked-up trigrams, LIKE checks the text.
 */
export function whereValueHasText(db: Db, query: Knex.QueryBuilder, alias: string, foldedText: string, lookup: TextLookup): void {
  const matching = textIndexOf(db).valuesHolding(db, lookup.trigrams);
  whereTextContains(query.whereIn(`${alias}.id`, matching), alias, foldedText);
}

/** Checks that the value row `alias` contains `foldedText` (no index: for rows already found). */
export function whereTextContains(query: Knex.QueryBuilder, alias: string, foldedText: string): Knex.QueryBuilder {
  return query.whereRaw(`??.text_folded like ? escape '\\'`, [alias, containsPattern(foldedText)]);
}

/** Checks that the entry row `e` has a text value containing `foldedText`. */
export function whereEntryHasText(query: Knex.QueryBuilder, foldedText: string): void {
  query.whereRaw(`e.search_text like ? escape '\\'`, [containsPattern(foldedText)]);
}

/**
 * Checks that the entry row `e` has text containing at least one of `foldedTexts`, in one
 * pass over its text however many they are (a regular expression of the escaped texts).
 */
export function whereEntryHasAnyText(db: Db, query: Knex.QueryBuilder, foldedTexts: readonly string[]): void {
  if (foldedTexts.length === 1) {
    whereEntryHasText(query, foldedTexts[0]!);
    return;
  }
  query.whereRaw(`e.search_text ${dialectOf(db).regexpOperator} ?`, [foldedTexts.map((text) => text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&')).join('|')]);
}
