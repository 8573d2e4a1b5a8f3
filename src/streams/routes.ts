import { Router, type Request, type RequestHandler, type Response } from 'express';
import type { Db } from '../db/knex.js';
import type { Logger } from '../logger.js';
import { callerOf } from '../http/api-key-auth.js';
import type { SessionService } from '../sessions/service.js';
import { presentMessages } from '../sessions/api.js';
import type { TaskService } from '../tasks/service.js';
import type { StreamFeed } from './feed.js';
import * as queries from './queries.js';

/** Events read per look: a long history is sent in pieces, never held whole. */
const PAGE = 200;

const FINAL = { task: ['done', 'cancelled'], session: ['completed', 'failed', 'cancelled'] } as const;

type Kind = 'task' | 'session';

/**
 * Server-sent events of one task or session: `status` (the task or session as it is when
 * sent, with the status the event records), `message` (a message complete), `delta` (text
 * added to a reply or result being written). Each event's `id:` is its number within its
 * task or session, so a client that reconnects with `Last-Event-ID` gets every later event
 * exactly once, from whichever process. The stream ends after the event that leaves its
 * work final. An open stream holds only the number of the last event it sent.
 */
export function streamRoutes({
  auth,
  db,
  tasks,
  sessions,
  feed,
  logger,
}: {
  auth: RequestHandler[];
  logger: Logger;
  db: Db;
  tasks: TaskService;
  sessions: SessionService;
  feed: StreamFeed;
}) {
  const router = Router();

  /** The data an event is sent with. */
  async function payload(kind: Kind, organizationId: string, id: string, event: queries.StreamEventRow): Promise<unknown> {
    const data = JSON.parse(event.data) as Record<string, unknown>;
    if (event.kind === 'delta') return data;
    if (event.kind === 'status') {
      const now = kind === 'task' ? await tasks.read(organizationId, id) : await sessions.read(organizationId, id);
      return { ...now, status: data.status };
    }
    const messageId = Number(data.message_id);
    if (kind === 'session') {
      const row = await db('session_messages').where({ id: messageId, session_id: id }).first();
      return row ? (presentMessages([row])[0] ?? null) : null;
    }
    const row = await db('task_events').where({ id: messageId, task_id: id }).first();
    return row && { id: Number(row.id), author: row.author, text: row.text ?? '', partial: Boolean(row.partial), created_at: row.created_at };
  }

  /** Whether the stream may end after this status: final, and (a session ended at once) owing no answer. */
  async function ends(kind: Kind, id: string, status: string): Promise<boolean> {
    if (!(FINAL[kind] as readonly string[]).includes(status)) return false;
    if (kind === 'task') return true;
    const row = await db('sessions').where({ id }).first('reply_due');
    return !row?.reply_due;
  }

  function serve(kind: Kind): RequestHandler {
    return async (req: Request, res: Response) => {
      const organizationId = callerOf(req).organizationId;
      const id = String(req.params.id);
      // An unknown id answers the JSON 404, not a stream.
      await (kind === 'task' ? tasks.get(organizationId, id) : sessions.get(organizationId, id));
      let lastSeq = lastEventId(req);
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' });
      res.flushHeaders();
      let closed = false;
      let pumping: Promise<void> | undefined;
      let again = false;
      const close = () => {
        if (closed) return;
        closed = true;
        unwatch();
        clearInterval(keepAlive);
        res.end();
      };

      async function pump(): Promise<void> {
        for (let more = true; more && !closed; ) {
          const events = await queries.readStreamEvents(db, id, lastSeq, PAGE);
          more = events.length === PAGE;
          for (const event of events) {
            if (closed) return;
            res.write(`id: ${event.seq}\nevent: ${event.kind}\ndata: ${JSON.stringify(await payload(kind, organizationId, id, event))}\n\n`);
            lastSeq = event.seq;
            if (event.kind === 'status' && (await ends(kind, id, (JSON.parse(event.data) as { status: string }).status))) return close();
          }
        }
      }
      /** Looks for new events; a wake-up while a look runs makes one more look after it. */
      function look(): void {
        if (pumping !== undefined) {
          again = true;
          return;
        }
        pumping = pump()
          .catch((err) => {
            logger.warn({ err, requestId: req.id }, 'event stream failed');
            close();
          })
          .finally(() => {
            pumping = undefined;
            if (again && !closed) {
              again = false;
              look();
            }
          });
      }

      const unwatch = feed.watch(id, look);
      const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), feed.keepAliveMs);
      req.on('close', close);
      look();
    };
  }

  router.get('/tasks/:id/events', ...auth, serve('task'));
  router.get('/sessions/:id/events', ...auth, serve('session'));
  return router;
}

/** The `Last-Event-ID` a reconnecting client sends: the number of the last event it got (0: from the start). */
function lastEventId(req: Request): number {
  const value = Number(req.get('last-event-id'));
  return Number.isSafeInteger(value) && value > 0 ? value : 0;
}
