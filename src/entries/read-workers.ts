import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { ClientClosedRequestError, HttpError } from '../http/errors.js';
import type { EntryTypeWithFields } from './entry-type-service.js';
import { type JsonPage, type ListOptions, READ_TIMEOUT_MS, SearchTimedOutError } from './page-reader.js';
import type { ReadResult } from './read-worker.js';
import { SearchGate } from './search-gate.js';

export interface ReadWorkerData {
  databaseFile: string;
  searchDriveLimit?: number;
}

export interface ReadWorkerOptions {
  /** How long a read may take, waiting included (READ_TIMEOUT_MS). */
  timeoutMs: number;
  /** The module the threads run (read-worker.ts); tests give one that wraps it. */
  workerFile: URL;
}

export type ReadWorkers = ReturnType<typeof createReadWorkers>;

// read-worker.ts under tsx (tests), read-worker.js once built.
const WORKER_FILE = new URL(`./read-worker${path.extname(import.meta.url)}`, import.meta.url);

/**
 * A thread's statements stop themselves at the deadline (within_deadline); one that has still
 * not answered this long after it is terminated, whatever it is doing.
 */
const TERMINATE_AFTER_MS = 1000;

/**
 * Entry pages read in worker threads, each with its own read-only connection (SQLite in WAL
 * mode lets readers run beside the writer, and each statement sees every commit made
 * before it). better-sqlite3 runs a statement to its end on the thread that asks, so in
 * the server's thread every search would hold up all other requests; here a worker spends
 * that time while the server's thread goes on answering HTTP, and on a machine with a
 * second core both run at once (docs/performance.md).
 *
 * Pages without `q` and searches have threads of their own, so no search, however slow,
 * holds up a plain page; an organization runs at most `threads - 1` searches at once (see
 * SearchGate), so no tenant holds up another's searches either. A read gets 5 s, waiting
 * included (503 `Search timed out`); a caller that goes away (`signal`) stops its read.
 */
export function createReadWorkers({
  threads,
  timeoutMs = READ_TIMEOUT_MS,
  workerFile = WORKER_FILE,
  ...data
}: ReadWorkerData & { threads: number } & Partial<ReadWorkerOptions>) {
  // Piscina (maintained by Node.js core contributors) keeps the threads, queues the reads,
  // replaces a thread that dies and terminates the thread of a read that is aborted. Started
  // with the first read, so that a process that reads no entries starts no threads.
  const pool = (concurrentTasksPerWorker: number) => {
    let started: Piscina | undefined;
    return {
      get: () =>
        (started ??= new Piscina({
          filename: workerFile.href,
          workerData: data,
          minThreads: threads,
          maxThreads: threads,
          idleTimeout: Infinity,
          concurrentTasksPerWorker,
        })),
      get started() {
        return started;
      },
    };
  };
  // A pages thread takes its next read while the last page travels back to the server's
  // thread (selective search bench row: 1,819 -> 2,710 req/s). A search thread runs one at
  // a time: stopping a search terminates its thread, which must not take another read along.
  const pages = pool(2);
  const searches = pool(1);
  const gate = new SearchGate(Math.max(1, threads - 1));

  // Piscina's own close() can end reads still waiting in its queue; these are waited for.
  const underWay = new Set<Promise<unknown>>();

  async function read(type: EntryTypeWithFields, options: ListOptions, signal?: AbortSignal): Promise<ReadResult> {
    const deadline = Date.now() + timeoutMs;
    const task = { type, options: { ...options, deadline } };
    const overdue = AbortSignal.timeout(timeoutMs + TERMINATE_AFTER_MS);
    const stop = signal ? AbortSignal.any([signal, overdue]) : overdue;
    if (!options.q?.trim()) return pages.get().run(task, { signal: stop }) as Promise<ReadResult>;
    const waitUntil = AbortSignal.any([stop, AbortSignal.timeout(timeoutMs)]);
    return gate.run(type.organization_id, waitUntil, () => searches.get().run(task, { signal: stop }) as Promise<ReadResult>);
  }

  return {
    async listJson(type: EntryTypeWithFields, options: ListOptions, signal?: AbortSignal): Promise<JsonPage> {
      const run = read(type, options, signal);
      underWay.add(run);
      let result: ReadResult;
      try {
        result = await run;
      } catch (err) {
        if (signal?.aborted) throw new ClientClosedRequestError();
        if ((err as Error)?.name === 'AbortError' || (err as Error)?.name === 'TimeoutError') throw new SearchTimedOutError();
        throw err;
      } finally {
        underWay.delete(run);
      }
      if ('error' in result) throw new HttpError(result.error.status, result.error.message);
      return result.page;
    },

    /** The running threads, plain pages' and searches' (none before the first read). */
    get threads(): readonly Worker[] {
      return [...(pages.started?.threads ?? []), ...(searches.started?.threads ?? [])];
    },

    /** Searches of the organization running now, and waiting for a slot. */
    searchLoad: (organizationId: string) => gate.load(organizationId),

    /** Lets the reads under way finish, then ends the threads. */
    async close(): Promise<void> {
      while (underWay.size) await Promise.allSettled(underWay);
      await Promise.all([pages.started?.close(), searches.started?.close()]);
    },
  };
}
