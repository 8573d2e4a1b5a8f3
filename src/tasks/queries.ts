import type { Db } from '../db/knex.js';

export const TASK_STATUSES = ['open', 'in_progress', 'done', 'waiting'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

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

export async function insertTask(db: Db, row: TaskRow): Promise<void> {
  await db('tasks').insert(row);
}
