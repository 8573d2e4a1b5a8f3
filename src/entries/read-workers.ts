import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { HttpError } from '../http/errors.js';
import type { EntryTypeWithFields } from './entry-type-service.js';
import type { JsonPage, ListOptions } from './page-reader.js';
import type { ReadResult } from './read-worker.js';

export interface ReadWorkerData {
  databaseFile: string;
  searchDriveLimit?: number;
}

export type ReadWorkers = ReturnType<typeof createReadWorkers>;

/**
 * Entry pages read in worker threads, each with its own read-only connection (SQLite in WAL
 * mode lets readers run beside the writer, and each statement sees every commit made
 * before it). better-sqlite3 runs a statement to its end on the thread that asks, so in
 * the server's thread every search would hold up all other requests; here a worker spends
 * that time while the server's thread goes on answering HTTP, and on a machine with a
 * second core both run at once (docs/performance.md).
 */
export function createReadWorkers({ threads, ...data }: ReadWorkerData & { threads: number }) {
  // Piscina (maintained by Node.js core contributors) keeps the threads, queues the reads
  // and replaces a thread that dies. Started with the first read, so that a process that
  // reads no entries starts no threads.
  let pool: Piscina | undefined;
  const start = () =>
    new Piscina({
      // read-worker.ts under tsx (tests), read-worker.js once built.
      filename: new URL(`./read-worker${path.extname(import.meta.url)}`, import.meta.url).href,
      workerData: data,
      minThreads: threads,
      maxThreads: threads,
      idleTimeout: Infinity,
      // A thread takes its next read while the last page travels back to the server's
      // thread, instead of waiting for it (selective search bench row: 1,819 -> 2,710 req/s).
      concurrentTasksPerWorker: 2,
    });

  // Piscina's own close() can end reads still waiting in its queue; these are waited for.
  const underWay = new Set<Promise<unknown>>();

  return {
    async listJson(type: EntryTypeWithFields, options: ListOptions): Promise<JsonPage> {
      pool ??= start();
      const run = pool.run({ type, options }) as Promise<ReadResult>;
      underWay.add(run);
      const result = await run.finally(() => underWay.delete(run));
      if ('error' in result) throw new HttpError(result.error.status, result.error.message);
      return result.page;
    },

    /** The running threads (none before the first read). */
    get threads(): readonly Worker[] {
      return pool?.threads ?? [];
    },

    /** Lets the reads under way finish, then ends the threads. */
    async close(): Promise<void> {
      while (underWay.size) await Promise.allSettled(underWay);
      await pool?.close();
    },
  };
}
