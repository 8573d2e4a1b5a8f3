import type { Knex } from 'knex';
import type { Db } from '../../db/knex.js';
import { dialectOf } from '../../db/dialect.js';

/**
 * The substring index over text values, the one part of search each database does its own
 * way (the rest of the differences are in db/dialect.ts). Both answer "which values hold all
 * these trigrams" as a query of `value_id`s; LIKE then checks the text itself
 * (text-match.ts), so the answers are the same on both.
 * - SQLite: an FTS5 table with the trigram tokenizer, kept in step by triggers
 *   (migrations 20261121000700 and 20261121001200).
 * - PostgreSQL: a pg_trgm GIN index on entry_values.text_folded (migration
 *   20261121000700), which serves LIKE '%…%' directly.
 */
export interface TextIndex {
  /** Ids (as `value_id`) of the values whose text holds every one of `trigrams`. */
  valuesHolding(db: Db, trigrams: readonly string[]): Knex.QueryBuilder;
  /** The first `limit` of those in id order (an estimate's sample, see TrigramStats). */
  firstValuesHolding(db: Db, trigrams: readonly string[], limit: number): Knex.QueryBuilder;
  /** Compacts the index after many writes, a step at a time; returns the steps that did work. */
  merge(db: Db): Promise<number>;
}

/**
 * Pages of index one merge step writes; other queries run between steps. A step's length
 * varies with what it merges, so this bounds the work of a step, not its time.
 */
const MERGE_STEP_PAGES = 50;

const fts5: TextIndex = {
  valuesHolding(db, trigrams) {
    return db('entry_values_fts')
      .select({ value_id: 'rowid' })
      .whereRaw('entry_values_fts match ?', [matchAll(trigrams)]);
  },
  firstValuesHolding(db, trigrams, limit) {
    return this.valuesHolding(db, trigrams).orderBy('rowid').limit(limit);
  },
  /**
   * Merges the FTS5 index into one segment (its 'merge' command). Writes leave it in several
   * segments, and a lookup reads every segment, so a merged index answers lookups sooner
   * (docs/performance.md).
   */
  async merge(db) {
    for (let steps = 0; ; steps++) {
      // A negative page count merges across levels, towards a single segment. FTS5 tells that a
      // step did no work by changing fewer than two rows; the transaction keeps other writes out
      // of that count.
      const changed = await db.transaction(async (trx) => {
        const before = await totalChanges(trx);
        await trx.raw(`insert into entry_values_fts (entry_values_fts, rank) values ('merge', ?)`, [-MERGE_STEP_PAGES]);
        return (await totalChanges(trx)) - before;
      });
      if (changed < 2) return steps;
      await new Promise((resolve) => setImmediate(resolve));
    }
  },
};

const pgTrgm: TextIndex = {
  valuesHolding(db, trigrams) {
    const query = db('entry_values').select({ value_id: 'id' });
    for (const trigram of trigrams) query.whereRaw(`text_folded like ? escape '\\'`, [containsPattern(trigram)]);
    return query;
  },
  firstValuesHolding(db, trigrams, limit) {
    return this.valuesHolding(db, trigrams).orderBy('id').limit(limit);
  },
  /** GIN indexes fold their pending list in as autovacuum runs; nothing to do here. */
  async merge() {
    return 0;
  },
};

export function textIndexOf(db: Db): TextIndex {
  return dialectOf(db).kind === 'postgres' ? pgTrgm : fts5;
}

async function totalChanges(db: Knex): Promise<number> {
  const row = (await db.first(db.raw('total_changes() as n'))) as { n: number };
  return Number(row.n);
}

/** An FTS5 query for values holding all the trigrams, each a quoted string (quotes doubled inside), so no character is query syntax. */
function matchAll(trigrams: readonly string[]): string {
  return trigrams.map((t) => `"${t.replace(/"/g, '""')}"`).join(' AND ');
}

/** `%text%` with LIKE's own wildcards escaped, so `50%` and `a_b` mean themselves. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
