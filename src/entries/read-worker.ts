import { workerData } from 'node:worker_threads';
import { openDatabase } from '../db/knex.js';
import { HttpError } from '../http/errors.js';
import type { EntryTypeWithFields } from './entry-type-service.js';
import { type JsonPage, type ListOptions, createPageReader } from './page-reader.js';
import type { ReadWorkerData } from './read-workers.js';

/**
 * A read worker's thread (see read-workers.ts): its own read-only connection and page
 * reader, for as long as the thread lives.
 */
const { databaseFile, searchDriveLimit } = workerData as ReadWorkerData;
const reader = createPageReader({ db: openDatabase(databaseFile, { readonly: true }), searchDriveLimit });

export type ReadResult = { page: JsonPage } | { error: { status: number; message: string } };

/** A read as the server's thread sends it: `budgetMs`, when given, limits it to that long from when it starts here. */
export interface ReadTask {
  type: EntryTypeWithFields;
  options: ListOptions & { deadline: number; budgetMs?: number };
}

/** One page read. A caller's mistake (a bad query or cursor) comes back as a value, with its status and text. */
export default async function readPage({ type, options }: ReadTask): Promise<ReadResult> {
  const { budgetMs, ...rest } = options;
  const deadline = budgetMs === undefined ? rest.deadline : Math.min(rest.deadline, Date.now() + budgetMs);
  try {
    return { page: await reader.listJson(type, { ...rest, deadline }) };
  } catch (err) {
    if (err instanceof HttpError) return { error: { status: err.status, message: err.message } };
    throw err;
  }
}
