import type { Db } from '../db/knex.js';
import { atomically } from '../db/group-commit.js';
import { appendDelta, appendFirstStatusEvents, appendStatusEvents, appendStreamEventsOf, insertedId, moveEvents } from '../streams/queries.js';
import { insertRows, insertRowsReturning, piecesOf, updateFromValues } from '../db/rows.js';
import type { Position } from '../http/cursor.js';
import { anyDue, claimPicked, type ClaimPick, type LeaseTerms, type Queue } from '../db/claims.js';
import { atOrAfter } from '../lib/clock.js';
import { groupBy } from '../lib/group-by.js';
import { bringRunTurnsForward, lapsed, runEnded, runsEnded } from '../scribes/queries.js';

export const TASK_STATUSES = ['open', 'in_progress', 'done', 'waiting', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
/** What a task may be cancelled from: `done` and `cancelled` are final. */
export const CANCELLABLE_TASK_STATUSES = ['open', 'in_progress', 'waiting'] as const satisfies readonly TaskStatus[];

export interface TaskRow {
  id: string;
  organization_id: string;
  scribe_id: string;
  request_id: string | null;
  status: TaskStatus;
  title: string;
  summary: string;
  acceptance_criteria: string | null;
  created_at: string;
  updated_at: string;
}

/**
 * Inserts new `open` tasks, each with its first event (by the system, with `textOf` its
 * text), in the caller's transaction: a statement per table for all of them, and one that
 * brings their scribes' turns for a run forward (scribes/queries.ts).
 */
export async function insertOpenTasks(trx: Db, rows: readonly TaskRow[], textOf: (row: TaskRow) => string): Promise<void> {
  if (rows.length === 0) return;
  await insertRows(trx, 'tasks', rows);
  const events: NewTaskEvent[] = rows.map((row) => ({ task_id: row.id, from_status: null, to_status: 'open', author: 'system', text: textOf(row), created_at: row.created_at }));
  await insertRows(trx, 'task_events', events);
  // A system note: its status is streamed, its text is not (see recordMoves).
  await appendFirstStatusEvents(
    trx,
    events.map((event) => ({ subjectId: event.task_id, status: event.to_status, at: event.created_at })),
  );
  await bringRunTurnsForward(
    trx,
    rows.map((row) => row.scribe_id),
    rows.reduce((earliest, row) => (row.created_at < earliest ? row.created_at : earliest), rows[0]!.created_at),
  );
}

export type TaskAuthor = 'scribe' | 'staff' | 'system';

export interface TaskEventRow {
  id: number;
  task_id: string;
  from_status: TaskStatus | null;
  to_status: TaskStatus;
  author: TaskAuthor;
  text: string | null;
  /** The scribe's result under way: it grows as the model writes it (at most one a task). */
  partial: boolean | number;
  created_at: string;
}

/** An event as it is recorded: whole. */
export type NewTaskEvent = Omit<TaskEventRow, 'id' | 'partial'>;

/** A task row with the runtime's columns (migration 0800). */
export interface WorkedTaskRow extends TaskRow {
  result: string | null;
  /** Why the agent last failed; a task is failed while it waits with one (the runtime's `fail`). */
  last_error: string | null;
  /** When staff marked its failure as dealt with. */
  discarded_at?: string | null;
  claim_token: string | null;
  lease_until: string | null;
  attempts: number;
}

/** A move being recorded (`recordMoves`): its event, and whether a result under way may be there. */
interface MoveRecord {
  event: NewTaskEvent;
  /** The caller knows the task has no result under way (a run: none at its claim, none saved since): not looked for. */
  noDraft?: boolean;
}

/** The scribe's move out of work: its text is the answer, which completes a result under way. */
const answers = (event: NewTaskEvent) => event.author === 'scribe' && event.from_status === 'in_progress';

/**
 * Records the events of moves of tasks (one each), in the caller's transaction, and the
 * events the API's streams tell of them, in a few statements however many. The scribe's
 * move out of work completes its result under way, if one was written as it came (streams
 * get the rest of its text); with none, streams get the answer as one delta. Any other move
 * drops a result under way. Then each move's status, and its text unless a system note.
 */
async function recordMoves(trx: Db, moves: readonly MoveRecord[]): Promise<void> {
  const looked = moves.filter((move) => !move.noDraft).map((move) => move.event.task_id);
  const drafted: Array<{ id: number; task_id: string; text: string }> = looked.length
    ? await trx('task_events').whereIn('task_id', looked).where({ partial: true }).select('id', 'task_id', 'text')
    : [];
  const drafts = new Map(drafted.map((draft) => [draft.task_id, { id: Number(draft.id), text: draft.text }]));
  const completing = moves.filter(({ event }) => answers(event) && drafts.has(event.task_id));
  for (const { event } of completing)
    await trx('task_events')
      .where({ id: drafts.get(event.task_id)!.id })
      .update({ ...event, partial: false });
  const dropped = moves.filter(({ event }) => !answers(event) && drafts.has(event.task_id)).map(({ event }) => event.task_id);
  if (dropped.length) await trx('task_events').whereIn('task_id', dropped).where({ partial: true }).delete();
  const added = moves.filter((move) => !completing.includes(move));
  const inserted = await insertRowsReturning<{ id: number | string; task_id: string }>(
    trx,
    'task_events',
    added.map((move) => move.event),
    ['id', 'task_id'],
  );
  const ids = new Map(inserted.map((row) => [row.task_id, Number(row.id)]));
  // A move's status, with the message it wrote (a system note's text is not streamed) and,
  // for the scribe's answer, what streams have not had of it as a delta.
  await appendStreamEventsOf(
    trx,
    moves.map(({ event }) => {
      const draft = answers(event) ? drafts.get(event.task_id) : undefined;
      const message =
        event.text !== null && event.author !== 'system'
          ? { id: draft?.id ?? ids.get(event.task_id)!, text: event.text, drafted: answers(event) ? (draft?.text ?? '') : undefined }
          : undefined;
      return { subjectId: event.task_id, events: moveEvents(event.to_status, message), at: event.created_at };
    }),
  );
}

export async function findTask(db: Db, organizationId: string, id: string): Promise<WorkedTaskRow | undefined> {
  return db<WorkedTaskRow>('tasks').where({ id, organization_id: organizationId }).first();
}

export async function findTaskById(db: Db, id: string): Promise<WorkedTaskRow | undefined> {
  return db<WorkedTaskRow>('tasks').where({ id }).first();
}

export async function findTaskEvents(db: Db, taskId: string): Promise<TaskEventRow[]> {
  return db<TaskEventRow>('task_events').where({ task_id: taskId }).orderBy('id');
}

/** The events of several tasks, each task's in order (the agent runtime reads those of a claim's tasks at once). */
export async function findEventsOfTasks(db: Db, taskIds: readonly string[]): Promise<Map<string, TaskEventRow[]>> {
  const rows = taskIds.length ? await db<TaskEventRow>('task_events').whereIn('task_id', taskIds).orderBy('id') : [];
  return groupBy(rows, (row) => row.task_id, taskIds);
}

/** A scribe's tasks, newest first, optionally only some statuses. */
export async function listTasksOfScribe(db: Db, scribeId: string, options: { statuses?: readonly TaskStatus[]; limit: number }): Promise<WorkedTaskRow[]> {
  const query = db<WorkedTaskRow>('tasks').where({ scribe_id: scribeId });
  if (options.statuses) query.whereIn('status', options.statuses);
  return query
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(options.limit);
}

/** A page of a scribe's tasks for the API, newest first, after a keyset position (tasks_scribe_created). */
export async function listTasksPage(db: Db, filter: { scribeId: string; status?: TaskStatus }, page: { limit: number; after?: Position }): Promise<WorkedTaskRow[]> {
  const query = db<WorkedTaskRow>('tasks').where({ scribe_id: filter.scribeId });
  if (filter.status) query.where('status', filter.status);
  if (page.after) query.whereRaw('(created_at, id) < (?, ?)', [page.after.createdAt, page.after.id]);
  return query
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(page.limit);
}

/** The last question the scribe asked of each task (its last whole move to `waiting` by the scribe), by task id. */
export async function latestQuestions(db: Db, taskIds: readonly string[]): Promise<Map<string, string>> {
  if (taskIds.length === 0) return new Map();
  const last = db('task_events').max('id').where({ to_status: 'waiting', author: 'scribe', partial: false }).whereIn('task_id', taskIds).groupBy('task_id');
  const rows: Array<{ task_id: string; text: string | null }> = await db('task_events').whereIn('id', last).select('task_id', 'text');
  return new Map(rows.filter((row) => row.text !== null).map((row) => [row.task_id, row.text!]));
}

export async function countTasksByStatus(db: Db, scribeId: string): Promise<Record<TaskStatus, number>> {
  const rows: Array<{ status: TaskStatus; n: number }> = await db('tasks').where({ scribe_id: scribeId }).groupBy('status').select('status').count({ n: '*' });
  const counts = Object.fromEntries(TASK_STATUSES.map((s) => [s, 0])) as Record<TaskStatus, number>;
  for (const row of rows) counts[row.status] = Number(row.n);
  return counts;
}

/** Marks a failed task as dealt with; false when it is not failed or already discarded. */
export async function discardTask(db: Db, organizationId: string, id: string, at: string): Promise<boolean> {
  const updated = await db('tasks')
    .where({ id, organization_id: organizationId, status: 'waiting' })
    .whereNotNull('last_error')
    .whereNull('discarded_at')
    .update({ discarded_at: at });
  return updated === 1;
}

/** Moves a task from `from` to `to` with its event, unless it has moved on; false then. */
export async function moveTask(
  db: Db,
  /** `claimToken`: only if the task's claim is this one (null: only if it has none). */
  move: {
    id: string;
    from: TaskStatus;
    to: TaskStatus;
    author: TaskAuthor;
    text: string | null;
    at: string;
    claimToken?: string | null;
    failedOnly?: boolean;
    /** The caller knows the task has no result under way (a run: none at its claim, none saved since): not looked for. */
    noDraft?: boolean;
  },
  columns: Partial<Pick<WorkedTaskRow, 'result' | 'last_error' | 'lease_until' | 'attempts'>> & { claim_token?: null } = {},
  /** More writes that belong to the move (its webhook event), in its transaction. */
  alongside?: (trx: Db) => Promise<unknown>,
): Promise<boolean> {
  return atomically(db, async (trx) => {
    const guard: Record<string, unknown> = { id: move.id, status: move.from };
    if (move.claimToken !== undefined) guard.claim_token = move.claimToken;
    const query = trx('tasks').where(guard);
    if (move.failedOnly) query.whereNotNull('last_error');
    // Back to work: a discard was of the failure before, not of the next one.
    const reopened = move.to === 'open' ? { discarded_at: null } : {};
    const [moved] = await query.update({ ...columns, ...reopened, status: move.to, updated_at: move.at }).returning(['scribe_id']);
    if (!moved) return false;
    // The claim it held is let go: one run fewer in flight for its scribe.
    if (typeof move.claimToken === 'string' && columns.claim_token === null) await runEnded(trx, moved.scribe_id, move.at);
    if (move.to === 'open') await bringRunTurnsForward(trx, [moved.scribe_id], move.at);
    const event = { task_id: move.id, from_status: move.from, to_status: move.to, author: move.author, text: move.text, created_at: move.at };
    await recordMoves(trx, [{ event, noDraft: move.noDraft }]);
    await alongside?.(trx);
    return true;
  });
}

/** A run's end as the runtime records it: its task out of in_progress, by the scribe's answer or by the system with the run's failure. */
export interface RunFinish {
  id: string;
  /** The run's claim: the task moves only while it holds it. */
  claimToken: string;
  to: 'done' | 'waiting';
  author: 'scribe' | 'system';
  text: string;
  at: string;
  /** The result of a task done; one left waiting keeps what it had. */
  result?: string;
  lastError: string | null;
  noDraft?: boolean;
}

/** Runs' ends one UPDATE takes at most. */
const FINISHES_PER_UPDATE = 64;

/**
 * Records runs' ends (each as `moveTask` out of in_progress, letting its claim go) in a few
 * statements for any number of them: the tasks whose claims still hold move, their scribes
 * count those runs as ended, and their events are recorded. `alongside` writes what goes with
 * the ends recorded (their webhook events), in the same transaction. The ends recorded.
 */
export function finishRuns(db: Db, finishes: readonly RunFinish[], alongside?: (trx: Db, finished: readonly RunFinish[]) => Promise<unknown>): Promise<RunFinish[]> {
  return atomically(db, (trx) => recordRunEnds(trx, finishes, alongside));
}

/** `finishRuns` in the caller's transaction: for a batch that writes more beside the ends (runtime/run-writes.ts). */
export async function recordRunEnds(trx: Db, finishes: readonly RunFinish[], alongside?: (trx: Db, finished: readonly RunFinish[]) => Promise<unknown>): Promise<RunFinish[]> {
  const moved = new Set<string>();
  for (const piece of piecesOf(trx, finishes, FINISHES_PER_UPDATE)) {
    const byId = new Map(piece.map((finish) => [finish.id, finish]));
    const rows = await updateFromValues<{ id: string; scribe_id: string }>(trx, 'tasks', {
      names: ['id', 'claim_token', 'status', 'result', 'last_error', 'updated_at'],
      rows: [...byId.values()].map((finish) => [finish.id, finish.claimToken, finish.to, finish.result ?? null, finish.lastError, finish.at]),
      // A task left waiting has no result of its own: it keeps the one it had. The token is compared as text (a uuid on PostgreSQL).
      set: 'status = v.status, result = coalesce(v.result, tasks.result), last_error = v.last_error, updated_at = v.updated_at, claim_token = null, lease_until = null, attempts = 0',
      where: "tasks.status = 'in_progress' and cast(tasks.claim_token as varchar(36)) = v.claim_token",
      returning: ['id', 'scribe_id'],
    });
    await runsEnded(
      trx,
      rows.map((row) => ({ scribeId: row.scribe_id, at: byId.get(row.id)!.at })),
    );
    for (const row of rows) moved.add(row.id);
  }
  const finished = finishes.filter((finish) => moved.has(finish.id));
  await recordMoves(
    trx,
    finished.map((finish) => ({
      event: { task_id: finish.id, from_status: 'in_progress', to_status: finish.to, author: finish.author, text: finish.text, created_at: finish.at },
      noDraft: finish.noDraft,
    })),
  );
  if (finished.length > 0) await alongside?.(trx, finished);
  return finished;
}

/**
 * Cancels a task that is not finished: `cancelled`, with its claim cleared, so a run still
 * working it finds its claim gone and records nothing. The move is guarded by the status it
 * was read in, and read again if another change came between. The status it had; undefined
 * when it is finished.
 */
export async function cancelTask(
  db: Db,
  move: { id: string; author: TaskAuthor; text: string; at: (updatedAt: string) => string },
  alongside?: (trx: Db) => Promise<unknown>,
): Promise<TaskStatus | undefined> {
  for (;;) {
    const task = await db<WorkedTaskRow>('tasks').where({ id: move.id }).first('status', 'claim_token', 'updated_at');
    if (!task || !(CANCELLABLE_TASK_STATUSES as readonly string[]).includes(task.status)) return undefined;
    // Guarded by the claim read too, so a claimed task's run is counted as ended exactly once.
    const moved = await moveTask(
      db,
      { id: move.id, from: task.status, to: 'cancelled', author: move.author, text: move.text, at: move.at(task.updated_at), claimToken: task.claim_token },
      { claim_token: null, lease_until: null },
      alongside,
    );
    if (moved) return task.status;
  }
}

/**
 * Stores `text` as the scribe's result under way (the task's one partial event, in_progress →
 * done: added at the first text, then rewritten whole; '' removes it), if `claim` still holds
 * the task. False when it does not: the run was cancelled, handed back or taken over.
 */
export async function saveDraftEvent(db: Db, claim: { id: string; token: string }, text: string, at: string): Promise<boolean> {
  return atomically(db, async (trx) => {
    // The claimed row is written first: that holds it (PostgreSQL) or the database (SQLite) to
    // the commit, so a cancel or a hand-back waits for this write, then removes what it wrote.
    const held = await trx('tasks').where({ id: claim.id, claim_token: claim.token, status: 'in_progress' }).update({ claim_token: claim.token });
    if (held === 0) return false;
    const draft = () => trx('task_events').where({ task_id: claim.id, partial: true });
    const before = (await draft().first('id', 'text')) as { id: number; text: string } | undefined;
    if (text === '') await draft().delete();
    else if (before) await draft().update({ text });
    const eventId = before
      ? Number(before.id)
      : text === ''
        ? 0
        : insertedId(
            await trx('task_events')
              .insert({ task_id: claim.id, from_status: 'in_progress', to_status: 'done', author: 'scribe', text, partial: true, created_at: at })
              .returning('id'),
          );
    await appendDelta(trx, claim.id, eventId, before?.text ?? '', text, at);
    return true;
  });
}

/** Tasks waiting for a claim, by scribe; one `in_progress` without a claim was handed back. */
const unclaimedTasks: Queue = {
  table: 'tasks',
  index: 'tasks_unclaimed_by_scribe',
  due: (q) => q.whereRaw("status in ('open', 'in_progress')").whereNull('claim_token'),
  order: ['created_at', 'id'],
  leaseColumn: 'lease_until',
};
/** Claimed tasks whose lease ran out. */
const lapsedTasks: Queue = { table: 'tasks', index: 'tasks_claimed', due: lapsed('tasks'), order: ['lease_until', 'id'], leaseColumn: 'lease_until' };

/** Whether any task waits unclaimed (a subquery for `exists`). */
export const tasksWaiting = (db: Db, now: string) => anyDue(db, unclaimedTasks, now);

/**
 * Claims the tasks `pick` names for runs (runtime/queries.ts), in the caller's transaction:
 * each `open` one moves to `in_progress`, with its event. The tasks as claimed.
 */
export async function claimTasks(trx: Db, terms: LeaseTerms, pick: ClaimPick): Promise<WorkedTaskRow[]> {
  const claimed = await claimPicked<WorkedTaskRow>(trx, { unclaimed: unclaimedTasks, lapsed: lapsedTasks }, pick, {
    now: terms.now,
    set: { claim_token: terms.token, lease_until: terms.leaseUntil, attempts: trx.raw('attempts + 1') },
  });
  const opened = claimed.filter((task) => task.status === 'open');
  if (opened.length === 0) return claimed;
  const now = new Date(terms.now);
  const moves = new Map(opened.map((task) => [task.id, atOrAfter(now, task.updated_at)]));
  // One statement for all moved at `now` (nearly all); one each for a task changed later still.
  for (const [at, tasks] of groupBy(opened, (task) => moves.get(task.id)!)) {
    await trx('tasks')
      .whereIn(
        'id',
        tasks.map((task) => task.id),
      )
      .update({ status: 'in_progress', updated_at: at });
  }
  await insertRows(
    trx,
    'task_events',
    opened.map((task) => ({ task_id: task.id, from_status: 'open', to_status: 'in_progress', author: 'scribe', text: null, created_at: moves.get(task.id)! })),
  );
  await appendStatusEvents(
    trx,
    'tasks',
    opened.map((task) => task.id),
    'in_progress',
    terms.now,
  );
  return claimed.map((task) => (moves.has(task.id) ? { ...task, status: 'in_progress' as const, updated_at: moves.get(task.id)! } : task));
}
