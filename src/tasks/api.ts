import { type Db, readsOf } from '../db/knex.js';
import { usageOf } from '../agents/queries.js';
import { listAttachmentsOf } from '../requests/queries.js';
import { latestQuestions, type WorkedTaskRow } from './queries.js';

/** A task as the API shows it (docs/api.md, Task object). */
export interface ApiTask {
  id: string;
  scribe_id: string;
  request_id: string | null;
  status: WorkedTaskRow['status'];
  title: string;
  summary: string;
  acceptance_criteria: string | null;
  result: string | null;
  question: string | null;
  error: string | null;
  attachments: Array<{ filename: string; content_type: string; size: number }>;
  usage: { input_tokens: number; output_tokens: number };
  created_at: string;
  updated_at: string;
}

/**
 * Tasks as the API shows them, with what each needs from other tables (its receipt's files,
 * its last question, its model calls' tokens) read once for the whole page.
 */
export async function presentTasks(db: Db, rows: readonly WorkedTaskRow[], scribeSlug: (row: WorkedTaskRow) => string): Promise<ApiTask[]> {
  const ids = rows.map((row) => row.id);
  const [files, questions, usage] = await readsOf(
    db,
    () =>
      listAttachmentsOf(
        db,
        rows.flatMap((row) => (row.request_id ? [row.request_id] : [])),
      ),
    () => latestQuestions(db, ids),
    () => usageOf(db, { taskIds: ids }),
  );
  return rows.map((row) => ({
    id: row.id,
    scribe_id: scribeSlug(row),
    request_id: row.request_id,
    status: row.status,
    title: row.title,
    summary: row.summary,
    acceptance_criteria: row.acceptance_criteria,
    result: row.result,
    question: questions.get(row.id) ?? null,
    error: row.last_error,
    attachments: files
      .filter((file) => file.request_id === row.request_id)
      .map((file) => ({ filename: file.filename, content_type: file.content_type, size: Number(file.size_bytes) })),
    usage: usage.get(row.id) ?? { input_tokens: 0, output_tokens: 0 },
    created_at: row.created_at,
    updated_at: row.updated_at,
  }));
}
