import type { Db } from '../db/knex.js';
import { dialectOf } from '../db/dialect.js';
import { createWakeups } from '../db/wakeups.js';
import type { Logger } from '../logger.js';
import * as queries from './queries.js';

export interface FeedOptions {
  /** How often SQLite's processes look for new events while a stream is open (they have no notifications). */
  pollMs: number;
  /** How often every open stream looks again whatever woke it: covers a notification lost with its connection. */
  sweepMs: number;
  /** A comment line this often keeps an idle stream open through proxies. */
  keepAliveMs: number;
}

export const defaultFeedOptions: FeedOptions = { pollMs: 50, sweepMs: 15_000, keepAliveMs: 15_000 };

export type StreamFeed = ReturnType<typeof createStreamFeed>;

/**
 * Tells the open event streams of this process when their task or session has new events,
 * with one look for all of them however many are open: on PostgreSQL a LISTEN on the
 * channel the events' transactions notify at commit; on SQLite, whose writes commit one at
 * a time in the order of their ids, a poll for ids after the last one seen. Each stream then
 * reads its own events by number, so a wake-up that comes twice or late loses nothing.
 * Nothing runs while no stream is open.
 */
export function createStreamFeed({ db, url, logger, options = defaultFeedOptions }: { db: Db; url: string; logger: Logger; options?: FeedOptions }) {
  const watchers = new Map<string, Set<() => void>>();
  const postgres = dialectOf(db).kind === 'postgres';
  const wakeups = postgres ? createWakeups({ db, url, logger }) : undefined;
  // biome-ignore lint/correctness/noUnusedVariables: read by its `??=` in started(), so the process listens once
  let listening: Promise<void> | undefined;
  let poll: NodeJS.Timeout | undefined;
  let sweep: NodeJS.Timeout | undefined;
  let lastId: number | undefined;

  const wake = (subjectId: string) => watchers.get(subjectId)?.forEach((watcher) => watcher());
  const wakeAll = () => watchers.forEach((set) => set.forEach((watcher) => watcher()));

  async function look(): Promise<void> {
    try {
      if (lastId === undefined) lastId = await queries.lastStreamEventId(db);
      for (;;) {
        const changed = await queries.subjectsChangedSince(db, lastId);
        lastId = changed.lastId;
        changed.subjects.forEach(wake);
        if (changed.subjects.length === 0) break;
      }
    } catch (err) {
      logger.warn({ err }, 'could not look for new stream events');
    }
    if (watchers.size > 0) poll = setTimeout(() => void look(), options.pollMs).unref();
    else poll = undefined;
  }

  function started(): void {
    sweep ??= setInterval(wakeAll, options.sweepMs).unref();
    if (wakeups) listening ??= wakeups.listen({ scribe_stream: wake }).catch((err) => logger.warn({ err }, 'could not listen for stream events; streams look every sweep'));
    else if (!poll) {
      lastId = undefined;
      poll = setTimeout(() => void look(), 0).unref();
    }
  }

  return {
    keepAliveMs: options.keepAliveMs,
    /** Calls `onNew` whenever `subjectId` may have new events, until the returned function is called. */
    watch(subjectId: string, onNew: () => void): () => void {
      let set = watchers.get(subjectId);
      if (!set) {
        set = new Set();
        watchers.set(subjectId, set);
      }
      set.add(onNew);
      started();
      return () => {
        set.delete(onNew);
        if (set.size === 0) watchers.delete(subjectId);
        if (watchers.size === 0) {
          clearInterval(sweep);
          sweep = undefined;
        }
      };
    },
    /** Streams open in this process (metrics, tests). */
    get open(): number {
      let n = 0;
      watchers.forEach((set) => (n += set.size));
      return n;
    },
    async close(): Promise<void> {
      clearTimeout(poll);
      clearInterval(sweep);
      watchers.clear();
      await wakeups?.close();
    },
  };
}
