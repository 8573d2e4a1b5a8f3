import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { ClientClosedRequestError, HttpError } from '../http/errors.js';
import type { EntryTypeWithFields } from './entry-type-service.js';
import { type JsonPage, type ListOptions, READ_TIMEOUT_MS, SearchTimedOutError } from './page-reader.js';
import type { ReadResult, ReadTask } from './read-worker.js';
import { SearchGate } from './search-gate.js';
import { FROM_SOURCES, PROJECT_ROOT } from '../lib/paths.js';

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

// read-worker.ts under tsx (tests); once built, its bundle (src/build.mjs).
const WORKER_FILE = pathToFileURL(path.join(PROJECT_ROOT, FROM_SOURCES ? 'src/entries/read-worker.ts' : 'dist/read-worker.js'));

/**
 * A thread's statements stop themselves at the deadline (within_deadline); one that has still
 * not answered this long after it is terminated, whatever it is doing.
 */
const TERMINATE_AFTER_MS = 1000;

/** How long a search may take in the threads that pages share before it moves to the slow lane. */
const FAST_BUDGET_MS = 50;
const SLOW_QUERIES_KEPT = 1000;
const SLOW_QUERY_TTL_MS = 60_000;

const timedOut = (result: ReadResult) => 'error' in result && result.error.status === 503;

/** What a search is remembered by: its type and what it asks (a primary-field search kept apart from any `q`). */
const searchKey = (typeId: string, { q, primaryContains }: Pick<ListOptions, 'q' | 'primaryContains'>) =>
  primaryContains === undefined ? `${typeId}\u0000${q}` : `${typeId}\u0001${primaryContains}`;

/**
 * Entry pages read in worker threads, each with its own read-only connection (SQLite in WAL
 * mode lets readers run beside the writer, and each statement sees every commit made
 * before it). better-sqlite3 runs a statement to its end on the thread that asks, so in
 * the server's thread every search would hold up all other requests; here a worker spends
 * that time while the server's thread goes on answering HTTP, and on a machine with a
 * second core both run at once (docs/performance.md).
 *
 * A search gets FAST_BUDGET_MS in the threads that pages share; one that needs longer stops
 * there (its statements check their deadline) and goes on in threads of its own, where an
 * organization runs at most `threads - 1` at once (SearchGate). So no search, however slow,
 * holds up a page for long, and no tenant holds up another's searches. A read gets 5 s,
 * waiting included (503 `Search timed out`); a caller that goes away (`signal`) stops a
 * search in the slow lane.
 */
export function createReadWorkers({ threads, timeoutMs = READ_TIMEOUT_MS, workerFile = WORKER_FILE, ...data }: ReadWorkerData & { threads: number } & Partial<ReadWorkerOptions>) {
  // Piscina (maintained by Node.js core contributors) keeps the threads, queues the reads,
  // replaces a thread that dies and terminates the thread of a read that is aborted. Started
  // with the first read, so that a process that reads no entries starts no threads.
  const pool = (size: number, concurrentTasksPerWorker: number) => {
    let started: Piscina | undefined;
    return {
      get: () =>
        (started ??= new Piscina({
          filename: workerFile.href,
          workerData: data,
          minThreads: size,
          maxThreads: size,
          idleTimeout: Infinity,
          concurrentTasksPerWorker,
        })),
      get started() {
        return started;
      },
    };
  };
  // Pages, and the first FAST_BUDGET_MS of every search. A thread takes its next read while
  // the last page travels back to the server's thread, rather than idling until it arrives,
  // so these reads carry no abort signal: piscina never queues a read behind an abortable
  // one, and each of these stops at its short deadline by itself.
  const reads = pool(threads, 2);
  // Searches that need longer: one at a time per thread, so that stopping one (terminating
  // its thread) never takes another along; an organization gets at most threads - 1 of them.
  const slow = pool(threads, 1);
  const gate = new SearchGate(Math.max(1, threads - 1));
  // Searches (type and what they ask) that outlasted their budget in the last minute go straight to the
  // slow lane instead of spending it again; all forgotten at once at the cap, like the plan
  // estimates (a forgotten one only spends its 50 ms again).
  const slowQueries = new Map<string, number>();
  const remember = (query: string) => {
    if (slowQueries.size >= SLOW_QUERIES_KEPT) slowQueries.clear();
    slowQueries.set(query, Date.now() + SLOW_QUERY_TTL_MS);
  };
  const knownSlow = (query: string) => (slowQueries.get(query) ?? 0) > Date.now();

  // Piscina's own close() can end reads still waiting in its queue; these are waited for.
  const underWay = new Set<Promise<unknown>>();

  /**
   * A page, or a search's first FAST_BUDGET_MS, in the shared threads; a search that needs
   * longer goes on in the slow lane: it waits for its organization's turn, and is aborted
   * (its thread terminated) when the caller goes away or a second past the deadline. Timers
   * and listeners rather than AbortSignal.timeout/any, which cost more per read than they save.
   */
  async function read(type: EntryTypeWithFields, options: ListOptions, signal?: AbortSignal): Promise<ReadResult> {
    const deadline = Date.now() + timeoutMs;
    const search = Boolean(options.q?.trim()) || options.primaryContains !== undefined;
    const known = search ? searchKey(type.id, options) : '';
    if (!search || !knownSlow(known)) {
      // The budget runs from when a thread takes the search up, not while it waits in the queue.
      const quick: ReadTask = { type, options: { ...options, deadline, ...(search && { budgetMs: FAST_BUDGET_MS }) } };
      const first = (await reads.get().run(quick)) as ReadResult;
      if (!search || !timedOut(first) || Date.now() >= deadline) return first;
      remember(known);
      signal?.throwIfAborted();
    }

    const task: ReadTask = { type, options: { ...options, deadline } };
    const stop = new AbortController();
    const waiting = new AbortController();
    const gone = () => stop.abort(signal!.reason);
    signal?.addEventListener('abort', gone, { once: true });
    const overdue = setTimeout(() => stop.abort(new SearchTimedOutError()), deadline - Date.now() + TERMINATE_AFTER_MS);
    const waitedTooLong = setTimeout(() => waiting.abort(new SearchTimedOutError()), deadline - Date.now());
    stop.signal.addEventListener('abort', () => waiting.abort(stop.signal.reason), { once: true });
    try {
      return await gate.run(type.organization_id, waiting.signal, () => {
        clearTimeout(waitedTooLong);
        return slow.get().run(task, { signal: stop.signal }) as Promise<ReadResult>;
      });
    } finally {
      clearTimeout(overdue);
      clearTimeout(waitedTooLong);
      signal?.removeEventListener('abort', gone);
    }
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
        if (err instanceof SearchTimedOutError || (err as Error)?.name === 'AbortError') throw new SearchTimedOutError();
        throw err;
      } finally {
        underWay.delete(run);
      }
      if ('error' in result) throw new HttpError(result.error.status, result.error.message);
      return result.page;
    },

    /** The running threads, plain pages' and searches' (none before the first read). */
    get threads(): readonly Worker[] {
      return [...(reads.started?.threads ?? []), ...(slow.started?.threads ?? [])];
    },

    /** Searches of the organization in the slow lane now, and waiting for their turn there. */
    searchLoad: (organizationId: string) => gate.load(organizationId),

    /** Whether this search of the type outlasted its budget in the last minute (it then starts in the slow lane). */
    knownSlow: (typeId: string, q: string) => knownSlow(searchKey(typeId, { q })),

    /** Lets the reads under way finish, then ends the threads. */
    async close(): Promise<void> {
      while (underWay.size) await Promise.allSettled(underWay);
      await Promise.all([reads.started?.close(), slow.started?.close()]);
    },
  };
}
