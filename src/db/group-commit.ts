import type { Db } from './knex.js';
import { dialectOf } from './dialect.js';

/**
 * Runs a short write (one statement, or a function that makes its own transaction) on its
 * own, or in a transaction shared with others (`groupCommits`).
 */
export type Writes = <T>(work: (trx: Db) => Promise<T>) => Promise<T>;

/** The transactions of the groups running now: a write given one of them is in a group. */
const groupTransactions = new WeakSet<Db>();

/**
 * Runs `work` as one: in a transaction of its own, or, given a group's transaction, in a
 * savepoint of it. The group's writes run one after another, so a savepoint of its own name
 * is enough; a nested Knex transaction would cost ten times the statements it guards (it
 * builds a new client for each), and the runs' writes are the commonest there are. Writes of
 * more than one statement that may come through `Writes` use this, not `db.transaction`.
 */
export async function atomically<T>(db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  if (!groupTransactions.has(db)) return db.transaction(work);
  await db.raw('savepoint grouped_write');
  const mark = groupEnds.get(db)?.length ?? 0;
  try {
    const value = await work(db);
    await db.raw('release grouped_write');
    return value;
  } catch (err) {
    // What it left for the group's end goes with what it wrote.
    groupEnds.get(db)?.splice(mark);
    // A failure that ended the whole transaction took the savepoint with it: the group's commit reports that.
    await db.raw('rollback to grouped_write').then(
      () => db.raw('release grouped_write'),
      () => {},
    );
    throw err;
  }
}

/** What the writes of each running group read once for all of them (`readOncePerGroup`), by key. */
const groupReads = new WeakMap<Db, Map<string, Promise<unknown>>>();

/**
 * `read()`, shared by the writes of one group: given a group's transaction, the first write to
 * ask for `key` reads and the group's later writes get what it read; given anything else, it
 * reads each time. Only for what no grouped write changes: no other process changes it either
 * until the group commits, since the group holds SQLite's one writer from its first write.
 */
export function readOncePerGroup<T>(db: Db, key: string, read: () => Promise<T>): Promise<T> {
  if (!groupTransactions.has(db)) return read();
  const reads = groupReads.get(db) ?? new Map<string, Promise<unknown>>();
  groupReads.set(db, reads);
  let value = reads.get(key) as Promise<T> | undefined;
  if (!value) {
    value = read();
    reads.set(key, value);
    // A failed read is not shared: the next write reads again.
    value.catch(() => reads.delete(key));
  }
  return value;
}

/** What applies the items writes left for their group's end (`atGroupEnd`). */
type ApplyAtEnd = (db: Db, items: readonly unknown[]) => Promise<void>;

/** What the writes of each running group left for its end, in order. */
const groupEnds = new WeakMap<Db, Array<{ item: unknown; apply: ApplyAtEnd }>>();

/**
 * `apply(db, items)` at once, given anything but a group's transaction; given one, `apply`
 * once at the group's end for the items of all its writes that succeeded (a write, or an
 * `atomically`, that fails takes its items back). For an update that many writes of a group
 * make to the same rows (a scribe's count of runs in flight): one statement for the group,
 * which takes those rows' locks together, at its end.
 */
export async function atGroupEnd<T>(db: Db, items: readonly T[], apply: (db: Db, items: readonly T[]) => Promise<void>): Promise<void> {
  const ends = groupEnds.get(db);
  if (!ends) return apply(db, items);
  for (const item of items) ends.push({ item, apply: apply as ApplyAtEnd });
}

/** Makes `trx` a group's transaction: its writes' `atomically` are savepoints, and what they leave for its end waits for `endGroup`. */
function beginGroup(trx: Db): Array<{ item: unknown; apply: ApplyAtEnd }> {
  groupTransactions.add(trx);
  const ends: Array<{ item: unknown; apply: ApplyAtEnd }> = [];
  groupEnds.set(trx, ends);
  return ends;
}

/**
 * Runs `work` as a group of its own, on any database: in one transaction, where the writes it
 * makes share their reads (`readOncePerGroup`) and leave the updates they have in common for
 * its end (`atGroupEnd`: a scribe's count of runs in flight, one statement for all, its rows
 * taken in order of id). For a batch of many runs' writes (runtime/run-writes.ts); on
 * PostgreSQL what they read once is as of the first read, a few milliseconds before the
 * commit. Given a group's transaction (SQLite's group commit), a savepoint of that group.
 */
export async function inOneGroup<T>(db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  if (groupTransactions.has(db)) return atomically(db, work);
  return db.transaction(async (trx) => {
    beginGroup(trx);
    const value = await work(trx);
    await endGroup(trx);
    return value;
  });
}

/** Runs what a group's writes left for its end: each `apply` once, with its items in the order they came. */
async function endGroup(trx: Db): Promise<void> {
  const byApply = new Map<ApplyAtEnd, unknown[]>();
  for (const { item, apply } of groupEnds.get(trx) ?? []) {
    const items = byApply.get(apply);
    if (items) items.push(item);
    else byApply.set(apply, [item]);
  }
  for (const [apply, items] of byApply) await apply(trx, items);
}

/**
 * Group commit for the small writes of many concurrent runs (a trace's call, a draft, a
 * finish). On SQLite, where one writer commits at a time and a commit costs more than the
 * few rows before it, writes share transactions: those that arrive while a group runs join
 * it, and those that come while it commits, or within `gapMs()` of its start, go together in
 * the next (the caller makes the
 * gap 0 while its writes come one at a time: a lone run's writes go at once). A write is one
 * statement or makes its own transaction (`atomically`), which becomes a savepoint in the
 * group's: one that fails rolls back alone and its caller gets its error; the others commit. A write
 * that comes when no group has started for `gapMs()` starts one at once. Like every SQLite
 * transaction here, a grouped write writes before it reads (dialect.ts, `writeFirst`).
 * A group takes writes for at most `maxGroupMs` (25 ms unless given) and leaves the rest to
 * the next: the one connection is let go between groups, so the requests waiting for it (the
 * API's) are not held up behind a burst of thousands of runs' writes.
 *
 * On PostgreSQL each write keeps its own transaction (or none, for one statement): writes
 * there commit in parallel on the pool's connections, and one group holding the row locks
 * of many runs could deadlock with another process's group (dialect.ts, `sharesCommits`).
 */
export function groupCommits(db: Db, { gapMs = () => 0, maxGroupMs = 25 }: { gapMs?: () => number; maxGroupMs?: number } = {}): Writes {
  if (!dialectOf(db).sharesCommits) return (work) => work(db);
  type Pending = { work: (trx: Db) => Promise<unknown>; resolve(value: unknown): void; reject(err: unknown): void };
  const waiting: Pending[] = [];
  let committing = false;
  let lastStart = -Infinity;

  async function commitGroups(): Promise<void> {
    while (waiting.length > 0) {
      const wait = lastStart + gapMs() - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      lastStart = performance.now();
      const group: Pending[] = [];
      const outcomes: Array<{ ok: true; value: unknown } | { ok: false; err: unknown }> = [];
      try {
        await db.transaction(async (trx) => {
          const ends = beginGroup(trx);
          const started = performance.now();
          while (waiting.length > 0 && (group.length === 0 || performance.now() - started < maxGroupMs)) {
            const write = waiting.shift()!;
            group.push(write);
            const mark = ends.length;
            try {
              outcomes.push({ ok: true, value: await write.work(trx) });
            } catch (err) {
              ends.splice(mark);
              outcomes.push({ ok: false, err });
            }
          }
          await endGroup(trx);
        });
        group.forEach((write, i) => {
          const outcome = outcomes[i]!;
          if (outcome.ok) write.resolve(outcome.value);
          else write.reject(outcome.err);
        });
      } catch (err) {
        // The commit itself failed: nothing of the group was written. One that failed to begin
        // (no connection: the database is closing) took no writes; those waiting fail with it
        // rather than try again at once, and again.
        for (const write of group.length > 0 ? group : waiting.splice(0)) write.reject(err);
      }
    }
    committing = false;
  }

  return <T>(work: (trx: Db) => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      waiting.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (committing) return;
      committing = true;
      // After the writes this one's caller makes in the same turn: they join its group.
      queueMicrotask(() => void commitGroups());
    });
}
