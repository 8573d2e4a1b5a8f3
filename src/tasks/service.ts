import type { Db } from '../db/knex.js';
import type { Actor, AuditLog } from '../audit/service.js';
import { type Clock, laterThan } from '../lib/clock.js';
import { UUID_PATTERN, newId } from '../lib/ids.js';
import { NotFoundError, ValidationError } from '../http/errors.js';
import * as queries from './queries.js';
import type { TaskEventRow, TaskStatus, WorkedTaskRow } from './queries.js';

export const messages = {
  taskNotFound: 'Task not found',
  notWaiting: 'Only a waiting task can be given input',
  inputRequired: 'Input is required',
};

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
export function createTaskService({ db, clock, audit, onOpened = () => {} }: { db: Db; clock: Clock; audit: AuditLog; onOpened?: (taskId: string) => void }) {
  return {
    async get(organizationId: string, id: string): Promise<WorkedTaskRow & { events: TaskEventRow[] }> {
      const task = UUID_PATTERN.test(id) ? await queries.findTask(db, organizationId, id) : undefined;
      if (!task) throw new NotFoundError(messages.taskNotFound);
      return { ...task, events: await queries.findTaskEvents(db, id) };
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
     * Creates the `open` task of a fulfilled receipt, in the caller's transaction (the
     * dispatcher's, which marks the receipt fulfilled with it); returns its id.
     */
    async createForReceipt(trx: Db, receipt: ReceiptInput, at: string): Promise<string> {
      const id = newId();
      await queries.insertTask(trx, {
        id,
        organization_id: receipt.organization_id,
        scribe_id: receipt.scribe_id,
        request_id: receipt.id,
        status: 'open',
        title: receipt.title,
        summary: receipt.summary,
        acceptance_criteria: receipt.acceptance_criteria,
        created_at: at,
        updated_at: at,
      });
      await queries.insertTaskEvent(trx, { task_id: id, from_status: null, to_status: 'open', author: 'system', text: `Created from receipt ${receipt.id}`, created_at: at });
      return id;
    },

    /** Staff answer a waiting task's question; it goes back to `open` for the agent. */
    async giveInput(actor: Actor, id: string, text: string): Promise<void> {
      if (!text.trim()) throw new ValidationError(messages.inputRequired);
      const task = await this.get(actor.organizationId, id);
      const moved =
        task.status === 'waiting' &&
        (await queries.moveTask(db, { id, from: 'waiting', to: 'open', author: 'staff', text, at: laterThan(clock, task.updated_at) }, { attempts: 0 }));
      if (!moved) throw new ValidationError(messages.notWaiting);
      await audit.record(actor, 'task.input', { type: 'task', id });
      onOpened(id);
    },
  };
}

