import type { Db } from '../db/knex.js';
import type { Actor, AuditLog } from '../audit/service.js';
import { type Clock, laterThan } from '../lib/clock.js';
import { UUID_PATTERN, newId } from '../lib/ids.js';
import { ConflictError, NotFoundError, ValidationError } from '../http/errors.js';
import type { SaveResponse } from '../http/idempotency.js';
import { taskEvent, type RecordEvents } from '../webhooks/events.js';
import { findScribeById } from '../scribes/queries.js';
import { decodeAfter, keysetPage } from '../http/cursor.js';
import type { ScribeRef } from '../scribes/service.js';
import { presentTasks, type ApiTask } from './api.js';
import * as queries from './queries.js';
import type { TaskEventRow, TaskStatus, WorkedTaskRow } from './queries.js';

export const messages = {
  taskNotFound: 'Task not found',
  notWaiting: 'Task is not waiting',
  inputRequired: 'Input is required',
  notFailed: 'Only a failed task can be retried or discarded',
  alreadyDiscarded: 'This task has already been discarded',
  alreadyFinished: 'Task is already finished',
};

/** A task the agent failed: the runtime left it waiting with the reason. */
export const isFailedTask = (task: Pick<WorkedTaskRow, 'status' | 'last_error'>) => task.status === 'waiting' && task.last_error !== null;

export type { TaskEventRow, TaskStatus, WorkedTaskRow };

/** What a task is made from: its receipt's input. */
export interface ReceiptInput {
  id: string;
  organization_id: string;
  scribe_id: string;
  title: string;
  summary: string;
  acceptance_criteria: string | null;
}
export type TaskService = ReturnType<typeof createTaskService>;

/**
 * Tasks as staff see and steer them (the agent runtime moves them otherwise). Input given
 * to a `waiting` task moves it back to `open`; `onOpened` tells the runtime.
 */
export function createTaskService({
  db,
  clock,
  audit,
  recordEvents = async () => [],
  onOpened = () => {},
  onCancelled = () => {},
}: {
  db: Db;
  clock: Clock;
  audit: AuditLog;
  /** Writes the `task.cancelled` webhook event in the cancel's transaction (the outbox). */
  recordEvents?: RecordEvents;
  onOpened?: (taskId: string) => void;
  /** Tells the process running the task, wherever it is, to stop it. */
  onCancelled?: (taskId: string) => void;
}) {
  /**
   * A change's answer: the task as the API shows it, read in the change's transaction, so as
   * the change left it; saved with it as the idempotent response when `save` is given.
   */
  async function answerIn(trx: Db, organizationId: string, id: string, slug: string, save?: SaveResponse): Promise<ApiTask> {
    const [task] = await presentTasks(trx, [(await queries.findTask(trx, organizationId, id))!], () => slug);
    await save?.(trx, { task });
    return task!;
  }

  return {
    async get(organizationId: string, id: string): Promise<WorkedTaskRow & { events: TaskEventRow[] }> {
      const task = UUID_PATTERN.test(id) ? await queries.findTask(db, organizationId, id) : undefined;
      if (!task) throw new NotFoundError(messages.taskNotFound);
      return { ...task, events: await queries.findTaskEvents(db, id) };
    },

    /** One task of the organization as the API shows it; 404 `Task not found` for any other id. */
    async read(organizationId: string, id: string): Promise<ApiTask> {
      const task = UUID_PATTERN.test(id) ? await queries.findTask(db, organizationId, id) : undefined;
      if (!task) throw new NotFoundError(messages.taskNotFound);
      const scribe = await findScribeById(db, task.scribe_id);
      return (await presentTasks(db, [task], () => scribe?.slug ?? ''))[0]!;
    },

    /** A page of the scribe's tasks as the API shows them, newest first; `next_cursor` is null on the last page. */
    async page(scribe: ScribeRef, options: { status?: TaskStatus; limit: number; after?: unknown }): Promise<{ tasks: ApiTask[]; next_cursor: string | null }> {
      const after = decodeAfter(options.after, (id) => UUID_PATTERN.test(id));
      const rows = await queries.listTasksPage(db, { scribeId: scribe.id, status: options.status }, { limit: options.limit + 1, after });
      const page = keysetPage(rows, options.limit);
      return { tasks: await presentTasks(db, page.items, () => scribe.slug), next_cursor: page.nextCursor };
    },

    /** A task by id alone, whatever its organization: for operators (the admin CLI), never for the API. */
    async find(id: string): Promise<WorkedTaskRow & { events: TaskEventRow[] }> {
      const task = UUID_PATTERN.test(id) ? await queries.findTaskById(db, id) : undefined;
      if (!task) throw new NotFoundError(messages.taskNotFound);
      return { ...task, events: await queries.findTaskEvents(db, id) };
    },

    async listForScribe(scribeId: string, options: { statuses?: readonly TaskStatus[]; limit?: number } = {}) {
      return queries.listTasksOfScribe(db, scribeId, { statuses: options.statuses, limit: options.limit ?? 50 });
    },

    async countByStatus(scribeId: string) {
      return queries.countTasksByStatus(db, scribeId);
    },

    /**
     * Creates the `open` tasks of fulfilled receipts, in the caller's transaction (the
     * dispatcher's, which marks the receipts fulfilled with them), a statement per table for
     * all; returns their ids in the receipts' order.
     */
    async createForReceipts(trx: Db, receipts: readonly ReceiptInput[], at: string): Promise<string[]> {
      const rows = receipts.map((receipt) => ({
        id: newId(),
        organization_id: receipt.organization_id,
        scribe_id: receipt.scribe_id,
        request_id: receipt.id,
        status: 'open' as const,
        title: receipt.title,
        summary: receipt.summary,
        acceptance_criteria: receipt.acceptance_criteria,
        created_at: at,
        updated_at: at,
      }));
      await queries.insertOpenTasks(trx, rows, (row) => `Created from receipt ${row.request_id}`);
      return rows.map((row) => row.id);
    },

    /** A failed task goes back to `open` for the agent, with its attempts and error cleared. */
    async retry(actor: Actor, id: string): Promise<void> {
      const task = await this.failed(actor.organizationId, id);
      // A system event: the model is not shown it as staff input (agents/openai.ts).
      const moved = await queries.moveTask(
        db,
        { id, from: 'waiting', to: 'open', author: 'system', text: `Retried by ${actor.label}`, at: laterThan(clock, task.updated_at), failedOnly: true },
        { attempts: 0, last_error: null },
      );
      if (!moved) throw new ValidationError(messages.notFailed);
      await audit.record(actor, 'task.retry', { type: 'task', id });
      onOpened(id);
    },

    /** Marks a failed task as dealt with: it leaves the console's failures and stays waiting. */
    async discard(actor: Actor, id: string): Promise<void> {
      await this.failed(actor.organizationId, id);
      if (!(await queries.discardTask(db, actor.organizationId, id, clock().toISOString()))) throw new ValidationError(messages.alreadyDiscarded);
      await audit.record(actor, 'task.discard', { type: 'task', id });
    },

    async failed(organizationId: string, id: string): Promise<WorkedTaskRow> {
      const task = UUID_PATTERN.test(id) ? await queries.findTask(db, organizationId, id) : undefined;
      if (!task) throw new NotFoundError(messages.taskNotFound);
      if (!isFailedTask(task)) throw new ValidationError(messages.notFailed);
      return task;
    },

    /**
     * Cancels a task that is `open`, `in_progress` or `waiting`; `cancelled` is final. A run
     * working it stops (`onCancelled`) and records nothing. 409 `Task is already finished`
     * for a `done` or `cancelled` task.
     */
    async cancel(actor: Actor, id: string, save?: SaveResponse): Promise<ApiTask> {
      const task = await this.get(actor.organizationId, id);
      const scribe = await findScribeById(db, task.scribe_id);
      let read: ApiTask | undefined;
      const was = await queries.cancelTask(
        db,
        { id, author: actor.type === 'user' ? 'staff' : 'system', text: `Cancelled by ${actor.label}`, at: (updatedAt) => laterThan(clock, updatedAt) },
        async (trx) => {
          await recordEvents(trx, [taskEvent(task, scribe?.slug ?? '', { status: 'cancelled' })]);
          read = await answerIn(trx, actor.organizationId, id, scribe?.slug ?? '', save);
        },
      );
      if (!was) throw new ConflictError(messages.alreadyFinished);
      await audit.record(actor, 'task.cancel', { type: 'task', id });
      if (was === 'in_progress') onCancelled(id);
      return read!;
    },

    /** The task's organization, for the admin CLI (which names a task by id alone). */
    async organizationOf(id: string): Promise<string> {
      return (await this.find(id)).organization_id;
    },

    /** Staff answer a waiting task's question; it goes back to `open` for the agent. */
    async giveInput(actor: Actor, id: string, text: string, save?: SaveResponse): Promise<ApiTask> {
      const task = await this.get(actor.organizationId, id);
      if (!text.trim()) throw new ValidationError(messages.inputRequired);
      const scribe = await findScribeById(db, task.scribe_id);
      // As the move left it, `open`: a runtime told of it may have claimed it by the time this returns.
      let read: ApiTask | undefined;
      const moved =
        task.status === 'waiting' &&
        (await queries.moveTask(db, { id, from: 'waiting', to: 'open', author: 'staff', text, at: laterThan(clock, task.updated_at) }, { attempts: 0 }, async (trx) => {
          read = await answerIn(trx, actor.organizationId, id, scribe?.slug ?? '', save);
        }));
      if (!moved) throw new ConflictError(messages.notWaiting);
      await audit.record(actor, 'task.input', { type: 'task', id });
      onOpened(id);
      return read!;
    },
  };
}
