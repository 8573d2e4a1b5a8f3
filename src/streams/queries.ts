import type { Db } from '../db/knex.js';
import type { Knex } from 'knex';
import { dialectOf } from '../db/dialect.js';
import { insertRows, piecesOf } from '../db/rows.js';

export const STREAM_EVENT_KINDS = ['status', 'message', 'delta'] as const;
export type StreamEventKind = (typeof STREAM_EVENT_KINDS)[number];

export interface StreamEventRow {
  id: number | string;
  subject_id: string;
  seq: number;
  kind: StreamEventKind;
  data: string;
  created_at: string;
}

/**
 * What each kind of row records: the status it moved to, the message completed, or text
 * added to a reply under way. A status may also carry the message its move wrote
 * (`message_id`), and `delta` when that message is an answer that came whole, which streams
 * tell first as one delta: one row for what streams tell as up to three events
 * (`eventsOfRow`), so a run's end writes one row, not three, and its answer is stored once.
 */
export type StreamEventData =
  | { kind: 'status'; data: StatusData }
  | { kind: 'message'; data: { message_id: number } }
  | { kind: 'delta'; data: { message_id: number; text: string } };

export interface StatusData {
  status: string;
  message_id?: number;
  delta?: true;
}

/** One event as streams send it: its number, and what it tells (a delta that is a whole message's text: `whole`). */
export type StreamEvent = EventTold & { seq: number };
type EventTold =
  | { kind: 'status'; status: string }
  | { kind: 'message'; messageId: number }
  | { kind: 'delta'; messageId: number; text: string }
  | { kind: 'delta'; messageId: number; whole: true };

/**
 * What a row tells: an answer that came whole as a delta, then the message the move wrote (a
 * session's answer, a task's result or question), then the status. The status comes last, so
 * a stream that ends at a final status has sent the message that came with it.
 */
function toldBy(event: StreamEventData): EventTold[] {
  if (event.kind === 'message') return [{ kind: 'message', messageId: Number(event.data.message_id) }];
  if (event.kind === 'delta') return [{ kind: 'delta', messageId: Number(event.data.message_id), text: event.data.text }];
  const { status, message_id: messageId, delta } = event.data;
  const told: EventTold = { kind: 'status', status };
  if (messageId === undefined) return [told];
  return [...(delta ? [{ kind: 'delta', messageId, whole: true } as const] : []), { kind: 'message', messageId }, told];
}

/** How many events a row stands for: its `seq` is the number of the last of them. */
function spanOf(event: StreamEventData): number {
  return toldBy(event).length;
}

/** The events a row stands for (`toldBy`), numbered up to its `seq`. */
export function eventsOfRow(row: Pick<StreamEventRow, 'seq' | 'kind' | 'data'>): StreamEvent[] {
  const parts = toldBy({ kind: row.kind, data: JSON.parse(row.data) } as StreamEventData);
  return parts.map((part, i) => ({ ...part, seq: Number(row.seq) - parts.length + 1 + i }));
}

/** An event's row in `appendStreamEventsOf`: numbered after its subject's last as the statement starts, by its place among that subject's events in the statement. */
const EVENT_ROW = '(?, coalesce((select max(e.seq) from stream_events e where e.subject_id = ?), 0) + ?, ?, ?, ?)';

/** The channel on which PostgreSQL tells listening processes which task or session has new events. */
export const STREAM_CHANNEL = 'scribe_stream';

/**
 * Records events of a task or a session, in order, numbered after its last one (one
 * statement), in the caller's transaction, which must already have written the task's or
 * session's row: that holds it until the commit, so its events are numbered and committed
 * in order. On PostgreSQL the notification goes out with the commit, and only if it commits.
 */
export async function appendStreamEvents(trx: Db, subjectId: string, events: readonly StreamEventData[], at: string): Promise<void> {
  await appendStreamEventsOf(trx, [{ subjectId, events, at }]);
}

/**
 * `appendStreamEvents` for several tasks or sessions at once (the runs that a batch of
 * finishes ended): one statement for every few hundred events however many subjects, each
 * numbered after that subject's last as the statement starts.
 */
export async function appendStreamEventsOf(trx: Db, subjects: ReadonlyArray<{ subjectId: string; events: readonly StreamEventData[]; at: string }>): Promise<void> {
  const events = subjects.flatMap(({ subjectId, events, at }) => events.map((event) => ({ subjectId, event, at })));
  for (const piece of piecesOf(trx, events)) {
    // Each row's last event's place among its subject's in this statement.
    const k = new Map<string, number>();
    const bindings = piece.flatMap(({ subjectId, event, at }) => {
      k.set(subjectId, (k.get(subjectId) ?? 0) + spanOf(event));
      return [subjectId, subjectId, k.get(subjectId)!, event.kind, JSON.stringify(event.data), at];
    });
    // Written as SQL, not built by Knex row by row (a Raw for each row's number): a batch of
    // runs' ends writes three events a run, and Knex took longer to build them than any other statement of the batch.
    await notifying(trx, `insert into stream_events (subject_id, seq, kind, data, created_at) values ${piece.map(() => EVENT_ROW).join(', ')}`, bindings);
  }
}

/**
 * Runs `insert` (of stream events), and on PostgreSQL notifies STREAM_CHANNEL of each task
 * or session it added events to, in the same statement: a statement fewer for every event
 * written, on a path that writes one for each run's end.
 */
async function notifying(trx: Db, insert: string, bindings: readonly Knex.RawBinding[]): Promise<void> {
  if (dialectOf(trx).kind !== 'postgres') {
    await trx.raw(insert, bindings);
    return;
  }
  // A data-modifying WITH runs to completion whatever the query after it reads.
  const notify = `with added as (${insert} returning subject_id) select pg_notify(?, s.id::text) from (select distinct subject_id as id from added) s`;
  await trx.raw(notify, [...bindings, STREAM_CHANNEL]);
}

/** One event of a task or a session, on the terms of `appendStreamEvents`. */
export function appendStreamEvent(trx: Db, subjectId: string, event: StreamEventData, at: string): Promise<void> {
  return appendStreamEvents(trx, subjectId, [event], at);
}

/** The same status event for several tasks or sessions of `table` at once (a claim of many), on the terms of `appendStreamEvent`. */
export async function appendStatusEvents(trx: Db, table: 'tasks' | 'sessions', subjectIds: readonly string[], status: string, at: string): Promise<void> {
  if (subjectIds.length === 0) return;
  const ids = subjectIds.map(() => '?').join(', ');
  await notifying(
    trx,
    `insert into stream_events (subject_id, seq, kind, data, created_at)
     select s.id, coalesce((select max(e.seq) from stream_events e where e.subject_id = s.id), 0) + 1, 'status', ?, ?
     from ${table} s where s.id in (${ids})`,
    [JSON.stringify({ status }), at, ...subjectIds],
  );
}

/**
 * The first events of new tasks or sessions, written in the transaction that creates them:
 * each is number 1, in one statement for all. No notification: a stream opens only on a
 * task or session it can read, so none can be waiting for these before they commit.
 */
export async function appendFirstStatusEvents(trx: Db, firsts: ReadonlyArray<{ subjectId: string; status: string; at: string }>): Promise<void> {
  await insertRows(
    trx,
    'stream_events',
    firsts.map(({ subjectId, status, at }) => ({ subject_id: subjectId, seq: 1, kind: 'status', data: JSON.stringify({ status }), created_at: at })),
  );
}

/** A task's or a session's events after `afterSeq`, in order, at most `limit`. */
export async function readStreamEvents(db: Db, subjectId: string, afterSeq: number, limit: number): Promise<StreamEventRow[]> {
  return db<StreamEventRow>('stream_events').where('subject_id', subjectId).where('seq', '>', afterSeq).orderBy('seq').limit(limit);
}

/** Whether the task or session has events after its event `seq`. */
export async function hasStreamEventsAfter(db: Db, subjectId: string, seq: number): Promise<boolean> {
  return (await db('stream_events').where('subject_id', subjectId).where('seq', '>', seq).first('seq')) !== undefined;
}

/** The newest event's id (0 when there is none): where a poller starts. */
export async function lastStreamEventId(db: Db): Promise<number> {
  const row = await db('stream_events').max({ id: 'id' }).first();
  return Number(row?.id ?? 0);
}

/** Which tasks and sessions have events after `afterId`, and the newest id read. */
export async function subjectsChangedSince(db: Db, afterId: number, limit = 1000): Promise<{ subjects: string[]; lastId: number }> {
  const rows: Array<{ id: number | string; subject_id: string }> = await db('stream_events').where('id', '>', afterId).orderBy('id').limit(limit).select('id', 'subject_id');
  return { subjects: [...new Set(rows.map((row) => row.subject_id))], lastId: rows.length ? Number(rows.at(-1)!.id) : afterId };
}

/**
 * Deletes the deltas written before `before` (a maintenance job): they are most of the rows,
 * and each reply they built is in its `message` event. Status and message events are kept, so
 * a stream still tells a task's or a session's whole story, and still ends.
 */
export async function pruneStreamDeltas(db: Db, before: string): Promise<number> {
  // A literal kind, so that both databases read the partial index of deltas (stream_events_deltas).
  return db('stream_events').whereRaw("kind = 'delta'").where('created_at', '<', before).delete();
}

/** Text added to a reply under way, as a delta event: what `text` adds to `before` (nothing when it does not extend it: the draft began again). */
export async function appendDelta(trx: Db, subjectId: string, messageId: number, before: string, text: string, at: string): Promise<void> {
  await appendStreamEvents(trx, subjectId, deltaOf(messageId, before, text), at);
}

/** The delta that takes a message's stored text from `before` to `text`: none when it adds nothing. */
export function deltaOf(messageId: number, before: string, text: string): StreamEventData[] {
  return text.length > before.length && text.startsWith(before) ? [{ kind: 'delta', data: { message_id: messageId, text: text.slice(before.length) } }] : [];
}

/**
 * The rows of a move for streams: its status, with the message it wrote (if streams tell
 * it). An answer (`drafted`: the text its draft held, '' for none) that came whole is told as
 * one delta by the status row; the rest of one written as it came is a delta row of its own,
 * pruned with the draft's deltas (`pruneStreamDeltas`), so an old answer's deltas are all gone.
 */
export function moveEvents(status: string, message?: { id: number; text: string; drafted?: string }): StreamEventData[] {
  if (!message) return [{ kind: 'status', data: { status } }];
  const whole = message.drafted === '' && message.text !== '';
  const rest = message.drafted ? deltaOf(message.id, message.drafted, message.text) : [];
  return [...rest, { kind: 'status', data: whole ? { status, message_id: message.id, delta: true } : { status, message_id: message.id } }];
}

/** The id of the row just inserted with `returning('id')`, as both databases give it. */
export function insertedId(rows: Array<{ id: number | string } | number | string>): number {
  const row = rows[0]!;
  return Number(typeof row === 'object' ? row.id : row);
}
