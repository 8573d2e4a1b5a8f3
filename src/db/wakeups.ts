import pg from 'pg';
import type { Db } from './knex.js';
import { dialectOf } from './dialect.js';
import type { Logger } from '../logger.js';

/**
 * How processes on one database wake each other when work arrives, so that a receipt
 * submitted to one process is dispatched at once by another. On PostgreSQL: NOTIFY with the
 * id of the new work only (payloads stay tiny), and a LISTEN connection per worker process.
 * Every worker also polls (work/background.ts, each second), which covers a notification lost
 * to a dropped connection or never delivered (PgBouncer in transaction mode). SQLite has
 * no notifications: its processes poll, and the process that took the work wakes itself.
 */
export type WakeupChannel = 'scribe_requests' | 'scribe_work' | 'scribe_webhooks' | 'scribe_cancel' | 'scribe_stream';
export type WakeupHandlers = Partial<Record<WakeupChannel, (id: string) => void>>;

export interface Wakeups {
  /** Tells the processes listening on `channel` that `id` is due. Never throws: polling is the fallback. */
  notify(channel: WakeupChannel, id: string): Promise<void>;
  /** Listens until closed, reconnecting after a lost connection. */
  listen(handlers: WakeupHandlers): Promise<void>;
  close(): Promise<void>;
}

/** Wait before listening again after the connection was lost. */
const RECONNECT_MS = 1000;

export function createWakeups({ db, url, logger }: { db: Db; url: string; logger: Logger }): Wakeups {
  if (dialectOf(db).kind !== 'postgres') {
    return { notify: async () => {}, listen: async () => {}, close: async () => {} };
  }
  let client: pg.Client | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;

  async function connect(handlers: WakeupHandlers): Promise<void> {
    const listener = new pg.Client({ connectionString: url });
    client = listener;
    const again = (err?: Error) => {
      if (closed || client !== listener) return;
      client = undefined;
      logger.warn({ err }, 'lost the wakeup connection; polling until it is back');
      void listener.end().catch(() => {});
      retry = setTimeout(() => void connect(handlers).catch(again), RECONNECT_MS);
    };
    listener.on('error', again);
    listener.on('end', () => again());
    listener.on('notification', (message) => {
      if (message.payload) handlers[message.channel as WakeupChannel]?.(message.payload);
    });
    await listener.connect();
    for (const channel of Object.keys(handlers)) await listener.query(`listen ${channel}`);
  }

  return {
    async notify(channel, id) {
      try {
        await db.raw('select pg_notify(?, ?)', [channel, id]);
      } catch (err) {
        logger.warn({ err, channel }, 'could not notify other processes; they will poll');
      }
    },
    async listen(handlers) {
      await connect(handlers);
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      await client?.end().catch(() => {});
      client = undefined;
    },
  };
}
