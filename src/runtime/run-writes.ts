import type { Db } from '../db/knex.js';
import { inOneGroup, type Writes } from '../db/group-commit.js';
import { insertAgentCalls, type NewAgentCall } from '../agents/queries.js';
import type { CallStore } from '../agents/trace.js';
import { batchedWrites } from '../lib/batch-per-key.js';
import { recordRunEnds, type RunFinish } from '../tasks/queries.js';
import { recordSessionAnswers, type AnswerToRecord } from '../sessions/queries.js';
import type { NewEvent, RecordEvents } from '../webhooks/events.js';

/** A task run's end, and the webhook event it makes if it is recorded. */
export interface RunEnd {
  finish: RunFinish;
  event: NewEvent;
}

/** What runs write together, batch by batch: a call of a run's trace, a task run's end, or a session's answer. */
type RunWrite = { call: NewAgentCall } | { end: RunEnd } | { answer: AnswerToRecord };

/**
 * Writes of at most this many items in a batch (a run writes at least two: a call and its
 * end or answer). A run gives its slot back before its record is written (work/engine.ts,
 * `released`) unless more runs wait to be written than there are slots: then runs keep
 * their slots until written, and the pace of this line sets the pace of the work. Smaller
 * batches were that bottleneck on PostgreSQL, where batches go one at a time
 * (docs/performance.md); much larger ones only make a failed batch's item-by-item retry longer.
 */
const WRITES_PER_BATCH = 192;

/**
 * The calls of all runs' traces, the ends of task runs and the answers of session runs, in
 * one line of batches (`batchedWrites`): the first write goes at once, and those that come
 * while a batch is written go together next, WRITES_PER_BATCH at a time, each batch one
 * group (db/group-commit.ts, `inOneGroup`) in one transaction: its calls in an INSERT or a
 * few, its answers and its ends in a few statements for all of them (sessions/queries.ts,
 * `recordSessionAnswers`; tasks/queries.ts, `recordRunEnds`), each with its webhook event,
 * and the scribes' counts of runs in flight for all of them in one statement at its end. A
 * run queues its calls before its end, so whoever reads an end can read how it came: they
 * are written in the same batch as the end or an earlier one, and the run waits for one
 * batch, not two. A batch that fails is written item by item, so a call, an end or an answer
 * that cannot be written fails alone.
 *
 * `lines`: batches under way at once. Where runs' writes share commits (SQLite, `writes` is a
 * group commit) several batches join one group, which writes them in the order they came,
 * rather than each waiting for the one before it to commit. Elsewhere each batch is a
 * transaction of its own, and one at a time keeps a run's calls ahead of its end.
 *
 * `gapMs`: the least time between the starts of two batches that are not full. Writes that
 * come one by one (answers spread out rather than in a burst) would otherwise find a line
 * free and go a batch each, each its few statements.
 */
export function runWrites(
  writes: Writes,
  recordEvents: RecordEvents,
  { lines = 1, gapMs }: { lines?: number; gapMs?: () => number } = {},
): { call: CallStore; end: (end: RunEnd) => Promise<void>; answer: (answer: AnswerToRecord) => Promise<void> } {
  const write = batchedWrites((items: readonly RunWrite[]) => writes((trx) => inOneGroup(trx, (t) => writeBatch(t, items, recordEvents))), {
    most: WRITES_PER_BATCH,
    lines,
    gapMs,
  });
  return { call: (call) => write({ call }), end: (end) => write({ end }), answer: (answer) => write({ answer }) };
}

async function writeBatch(trx: Db, items: readonly RunWrite[], recordEvents: RecordEvents): Promise<void> {
  const calls = items.flatMap((item) => ('call' in item ? [item.call] : []));
  const ends = items.flatMap((item) => ('end' in item ? [item.end] : []));
  if (calls.length > 0) await insertAgentCalls(trx, calls);
  const answers = items.flatMap((item) => ('answer' in item ? [item.answer] : []));
  if (answers.length > 0) await recordSessionAnswers(trx, answers);
  if (ends.length === 0) return;
  await recordRunEnds(
    trx,
    ends.map((end) => end.finish),
    (t, finished) => {
      const recorded = new Set(finished.map((finish) => finish.id));
      return recordEvents(
        t,
        ends.filter((end) => recorded.has(end.finish.id)).map((end) => end.event),
      );
    },
  );
}
