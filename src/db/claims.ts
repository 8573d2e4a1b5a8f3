import type { Knex } from 'knex';
import type { Db } from './knex.js';
import { dialectOf } from './dialect.js';

/**
 * Leased claims: how every background queue (receipts to dispatch, sessions and tasks to
 * work, webhook deliveries) gives each due row to exactly one worker, however many processes
 * share the database. A claim is one statement (dialect.ts, `claimRows`). On PostgreSQL,
 *
 *   with claimed as (select id from <table> where <due> order by <order> limit n
 *                     for no key update skip locked)
 *   update <table> set <claim> from claimed where <table>.id = claimed.id returning <table>.*
 *
 * SKIP LOCKED lets concurrent claimers take different rows without waiting for each other,
 * and the rows stay locked until the claim is written. SQLite runs one writer at a time, so
 * there a guarded update (update … where id in (<candidates>) and <due>) is enough. A claim
 * by shares (`claimDueInShares`) takes the candidates of each share together (union all),
 * each with its own order and limit. The claim writes a token and a lease end; work renews
 * its lease while it runs (`renewLeases`), and a lease that runs out (its process died)
 * makes the row due again.
 */
export interface Queue {
  table: string;
  /** The index a claim reads: one that holds the due rows, in `order`, and ideally nothing else. */
  index: string;
  /** Limits `table`'s rows (unaliased) to those due at `now`. */
  due(query: Knex.QueryBuilder, now: string): void;
  /** Which due rows go first: columns, ending in the id so ties break the same way on both databases. */
  order: readonly string[];
  /** The column that holds when a claim's lease ends. */
  leaseColumn: string;
}

export interface ClaimOptions {
  now: string;
  limit: number;
  /** The columns a claim sets: its token and lease end among them. */
  set: Record<string, unknown>;
  /** Further limits which due rows are taken (e.g. not those of a scribe that is busy enough). */
  only?: (query: Knex.QueryBuilder) => void;
  /** More to return with each row claimed than its columns (e.g. a subquery of a row it refers to), saving a read after the claim. */
  alongside?: readonly Knex.Raw[];
}

/** The first `limit` due rows of the queue, in its order, as a SELECT of ids. */
function candidates(db: Db, queue: Queue, { now, limit, only }: Omit<ClaimOptions, 'set' | 'alongside'>): Knex.QueryBuilder {
  const query = dialectOf(db)
    .fromIndex(db, queue.table, queue.index)
    .select('id')
    .orderBy([...queue.order])
    .limit(limit);
  queue.due(query, now);
  only?.(query);
  return query;
}

/** Claims up to `limit` due rows of the queue; the rows as they are after the claim. */
export async function claimDue<Row extends object>(db: Db, queue: Queue, options: ClaimOptions): Promise<Row[]> {
  return dialectOf(db).claimRows(db, queue.table, [candidates(db, queue, options)], (claim) => queue.due(claim, options.now), options.set, options.alongside) as Promise<Row[]>;
}

/**
 * Claims due rows of the queue by shares: for each `[value, count]`, up to `count` of the due
 * rows whose `column` holds `value`, in the queue's order (e.g. an endpoint's share of a
 * claim). One index seek per share, however many rows are due.
 */
export async function claimDueInShares<Row extends object>(
  db: Db,
  queue: Queue,
  { now, column, shares, set }: Pick<ClaimOptions, 'now' | 'set'> & { column: string; shares: ReadonlyArray<readonly [value: string, count: number]> },
): Promise<Row[]> {
  if (shares.length === 0) return [];
  const picks = shares.map(([value, count]) => candidates(db, queue, { now, limit: count, only: (query) => query.where(column, value) }));
  return dialectOf(db).claimRows(db, queue.table, picks, (claim) => queue.due(claim, now), set) as Promise<Row[]>;
}

/** Whether any row of the queue is due at `now`, as a subquery (for `exists`): one index seek. */
export function anyDue(db: Db, queue: Queue, now: string): Knex.QueryBuilder {
  const query = dialectOf(db).fromIndex(db, queue.table, queue.index).select(db.raw('1')).limit(1);
  queue.due(query, now);
  return query;
}

/** A claim's token, when it is made and when its lease ends unless renewed. */
export interface LeaseTerms {
  token: string;
  now: string;
  leaseUntil: string;
}

/**
 * Which rows of a queue kept by scribe a claim takes: of each `[scribeId, count]` share, up to
 * `count` of the scribe's oldest rows waiting for a claim; or up to `lapsed` rows whose
 * lease ran out, oldest lease first.
 */
export type ClaimPick = { shares: ReadonlyArray<readonly [scribeId: string, count: number]> } | { lapsed: number };

/** Claims the rows `pick` names, from `queues.unclaimed` (kept by `scribe_id`) or `queues.lapsed`. */
export async function claimPicked<Row extends object>(
  db: Db,
  queues: { unclaimed: Queue; lapsed: Queue },
  pick: ClaimPick,
  { now, set }: Pick<ClaimOptions, 'now' | 'set'>,
): Promise<Row[]> {
  if ('lapsed' in pick) return pick.lapsed > 0 ? claimDue<Row>(db, queues.lapsed, { now, limit: pick.lapsed, set }) : [];
  return claimDueInShares<Row>(db, queues.unclaimed, { now, column: 'scribe_id', shares: pick.shares, set });
}

/** Extends the leases of rows still held by `token`; how many it still holds. */
export async function renewLeases(db: Db, queue: Pick<Queue, 'table' | 'leaseColumn'>, claim: { ids: readonly string[]; token: string }, leaseUntil: string): Promise<number> {
  if (claim.ids.length === 0) return 0;
  return db(queue.table)
    .whereIn('id', claim.ids)
    .where('claim_token', claim.token)
    .update({ [queue.leaseColumn]: leaseUntil });
}

/**
 * Renews a claim's lease every `everyMs` until stopped, so that only a process that died (or
 * stopped serving its event loop) loses its work. Renewal failures are left to the next try.
 */
export function keepLeases(renew: () => Promise<unknown>, everyMs: number): { stop(): void } {
  const timer = setInterval(() => void renew().catch(() => {}), everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
