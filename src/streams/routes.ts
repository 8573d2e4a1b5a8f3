import { Router, type Request, type RequestHandler, type Response } from 'express';
import type { Db } from '../db/knex.js';
import type { Logger } from '../logger.js';
import { callerOf } from '../http/api-key-auth.js';
import type { SessionService } from '../sessions/service.js';
import { type ApiMessage, presentMessages } from '../sessions/api.js';
import type { TaskService } from '../tasks/service.js';
import type { StreamFeed } from './feed.js';
import * as queries from './queries.js';
import { BadRequestError } from '../http/errors.js';

export const messages = {
  invalidLastEventId: 'Invalid Last-Event-ID: send the id of the last event received, a whole number',
};

/** Events read per look: a long history is sent in pieces, never held whole. */
const PAGE = 200;

const FINAL = { task: ['done', 'cancelled'], session: ['completed', 'failed', 'cancelled'] } as const;

type Kind = 'task' | 'session';

/** Whether a task or session in `status` is final (a session may still owe an answer: `ends`). */
const isFinal = (kind: Kind, status: string) => (FINAL[kind] as readonly string[]).includes(status);

/**
 * Server-sent events of one task or session: `status` (the task or session as it is when
 * sent, with the status the event records), `message` (a message complete), `delta` (text
 * added to a reply or result being written). Each event's `id:` is its number within its
 * task or session, so a client that reconnects with `Last-Event-ID` gets every later event
 * exactly once, from whichever process. The stream ends after the event that leaves its
 * work final, or, on work already final, once the events after `Last-Event-ID` are sent. An
 * open stream holds only the number of the last event it sent.
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

  /** A message of the task or session as streams send it (null when it is gone). */
  async function messageOf(kind: Kind, id: string, messageId: number): Promise<ApiMessage | null> {
    if (kind === 'session') {
      const row = await db('session_messages').where({ id: messageId, session_id: id }).first();
      return row ? (presentMessages([row])[0] ?? null) : null;
    }
    const row = await db('task_events').where({ id: messageId, task_id: id }).first();
    return row ? { id: Number(row.id), author: row.author, text: row.text ?? '', partial: Boolean(row.partial), created_at: row.created_at } : null;
  }

  /** The data an event is sent with; undefined for a delta of a message that is gone. `message`: reads the event's message, once for a row's events. */
  async function payload(kind: Kind, organizationId: string, id: string, event: queries.StreamEvent, message: () => Promise<ApiMessage | null>): Promise<unknown> {
    if (event.kind === 'delta') {
      if ('text' in event) return { message_id: event.messageId, text: event.text };
      const whole = await message();
      return whole ? { message_id: event.messageId, text: whole.text } : undefined;
    }
    if (event.kind === 'status') {
      const now = kind === 'task' ? await tasks.read(organizationId, id) : await sessions.read(organizationId, id);
      return { ...now, status: event.status };
    }
    return message();
  }

  /**
   * Whether the stream may end after this status event: final, owing no answer (a session
   * ended at once, `completed` from its first event, is still answered), and the last event
   * recorded (that answer, once recorded, follows the first `completed`).
   */
  async function ends(kind: Kind, id: string, event: { status: string; seq: number }): Promise<boolean> {
    if (!isFinal(kind, event.status)) return false;
    if (kind === 'session' && (await db('sessions').where({ id }).first('reply_due'))?.reply_due) return false;
    return !(await queries.hasStreamEventsAfter(db, id, event.seq));
  }

  function serve(kind: Kind): RequestHandler {
    return async (req: Request, res: Response) => {
      const organizationId = callerOf(req).organizationId;
      const id = String(req.params.id);
      // An unknown id answers the JSON 404, not a stream. Read before any event: work final by
      // then has committed all of its events, so once they are sent the stream ends, for a
      // client that reconnected after the final event too.
      const work = kind === 'task' ? await tasks.get(organizationId, id) : await sessions.get(organizationId, id);
      const finished = isFinal(kind, 'state' in work ? work.state : work.status) && !('reply_due' in work && work.reply_due);
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
          const rows = await queries.readStreamEvents(db, id, lastSeq, PAGE);
          more = rows.length === PAGE;
          for (const row of rows) {
            let read: Promise<ApiMessage | null> | undefined;
            // A row's events after the last one sent: a client may have had some of them.
            for (const event of queries.eventsOfRow(row).filter((e) => e.seq > lastSeq)) {
              if (closed) return;
              const data = await payload(kind, organizationId, id, event, () => (read ??= 'messageId' in event ? messageOf(kind, id, event.messageId) : Promise.resolve(null)));
              if (data !== undefined) res.write(`id: ${event.seq}\nevent: ${event.kind}\ndata: ${JSON.stringify(data)}\n\n`);
              lastSeq = event.seq;
              if (event.kind === 'status' && (await ends(kind, id, event))) return close();
            }
          }
        }
        if (finished) close();
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

/**
 * The `Last-Event-ID` a reconnecting client sends: the number of the last event it got (0, or
 * none: from the start). Anything else is 400 rather than a guess (`1e1` is not event 10).
 */
function lastEventId(req: Request): number {
  const given = req.get('last-event-id')?.trim() ?? '';
  if (given === '') return 0;
  if (!/^\d{1,15}$/.test(given)) throw new BadRequestError(messages.invalidLastEventId);
  return Number(given);
}
