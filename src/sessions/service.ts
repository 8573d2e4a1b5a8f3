import type { Db } from '../db/knex.js';
import type { Actor, AuditLog } from '../audit/service.js';
import type { SaveResponse } from '../http/idempotency.js';
import { type Clock, isoNow, laterThan } from '../lib/clock.js';
import { UUID_PATTERN, newId } from '../lib/ids.js';
import { ConflictError, NotFoundError, ValidationError } from '../http/errors.js';
import { sessionEvent, type RecordEvents } from '../webhooks/events.js';
import { findScribeById } from '../scribes/queries.js';
import type { ScribeRef } from '../scribes/service.js';
import { presentSession, type ApiSession } from './api.js';
import * as queries from './queries.js';
import type { MessageRow, SessionRow } from './queries.js';

export const messages = {
  sessionNotFound: 'Session not found',
  notWaiting: 'Only a session waiting for a reply can be answered',
  replyRequired: 'Reply is required',
  notFailed: 'Only a failed session can be retried or discarded',
  alreadyDiscarded: 'This session has already been discarded',
  closed: 'Session is closed',
  messageRequired: 'Message is required',
};

export type { MessageRow, SessionRow };
export type SessionService = ReturnType<typeof createSessionService>;

/**
 * Chat sessions and their transcripts. A session owes an answer (`reply_due`) after each
 * user or staff message; `onReplyDue` tells the agent runtime so it starts at once.
 */
export function createSessionService({
  db,
  clock,
  audit,
  recordEvents = async () => [],
  onReplyDue = () => {},
  onCancelled = () => {},
}: {
  db: Db;
  clock: Clock;
  audit: AuditLog;
  /** Writes the `session.cancelled` webhook event in the cancel's transaction (the outbox). */
  recordEvents?: RecordEvents;
  onReplyDue?: (sessionId: string) => void;
  /** Tells the process answering the session, wherever it is, to stop. */
  onCancelled?: (sessionId: string) => void;
}) {
  /**
   * A change's answer: the session as the API shows it, read in the change's transaction, so
   * as the change left it; saved with it as the idempotent response when `save` is given.
   */
  async function answerIn(trx: Db, organizationId: string, id: string, slug: string, save?: SaveResponse): Promise<ApiSession> {
    const session = await presentSession(trx, { ...(await queries.findSession(trx, organizationId, id))!, messages: await queries.findMessages(trx, id) }, slug);
    await save?.(trx, { session });
    return session;
  }

  return {
    /**
     * A new session holding the user's message, `queued` for the scribe; or `completed`
     * at once when the caller asked to end it (it is still answered in the background).
     */
    async start(scribe: ScribeRef, input: { message: string; endImmediately: boolean }, actor?: Actor, save?: SaveResponse): Promise<SessionRow> {
      const now = isoNow(clock);
      const session: SessionRow = {
        id: newId(),
        organization_id: scribe.organization_id,
        scribe_id: scribe.id,
        state: input.endImmediately ? 'completed' : 'queued',
        reply_due: true,
        error_message: null,
        claim_token: null,
        lease_until: null,
        attempts: 0,
        created_at: now,
        updated_at: now,
      };
      await queries.insertSession(db, session, { author: 'user', text: input.message, created_at: now }, async (trx) => {
        if (actor) await audit.record(actor, 'session.start', { type: 'session', id: session.id }, undefined, trx);
        await save?.(trx, { session_id: session.id });
      });
      onReplyDue(session.id);
      return session;
    },

    /** A session of the organization with its transcript in order; 404 otherwise. */
    async get(organizationId: string, id: string): Promise<SessionRow & { messages: MessageRow[] }> {
      const session = UUID_PATTERN.test(id) ? await queries.findSession(db, organizationId, id) : undefined;
      if (!session) throw new NotFoundError(messages.sessionNotFound);
      return { ...session, messages: await queries.findMessages(db, id) };
    },

    /** A session by id alone, whatever its organization: for operators (the admin CLI), never for the API. */
    async find(id: string): Promise<SessionRow & { messages: MessageRow[] }> {
      const session = UUID_PATTERN.test(id) ? await queries.findSessionById(db, id) : undefined;
      if (!session) throw new NotFoundError(messages.sessionNotFound);
      return { ...session, messages: await queries.findMessages(db, id) };
    },

    /** A scribe's sessions, newest first, with their first message. */
    async listForScribe(scribeId: string, limit = 50) {
      return queries.listSessionsOfScribe(db, scribeId, limit);
    },

    /** A scribe's sessions, newest first, each with its whole transcript (the scribe's page). */
    async listWithTranscripts(scribeId: string, limit = 20) {
      const sessions = await queries.listSessionsOfScribe(db, scribeId, limit);
      const transcripts = await queries.findMessagesOfSessions(
        db,
        sessions.map((s) => s.id),
      );
      return sessions.map((s) => ({ ...s, messages: transcripts.get(s.id)! }));
    },

    /** One session of the organization as the API shows it; 404 `Session not found` for any other id. */
    async read(organizationId: string, id: string): Promise<ApiSession> {
      const session = await this.get(organizationId, id);
      const scribe = await findScribeById(db, session.scribe_id);
      return presentSession(db, session, scribe?.slug ?? '');
    },

    /**
     * The user's next message in an open session (the API): answered in order, after any
     * answer under way. 422 `Message is required` when blank; 409 `Session is closed`.
     */
    async addMessage(actor: Actor, id: string, text: string, save?: SaveResponse): Promise<ApiSession> {
      const session = await this.get(actor.organizationId, id);
      if (!text.trim()) throw new ValidationError(messages.messageRequired);
      const scribe = await findScribeById(db, session.scribe_id);
      let read: ApiSession | undefined;
      const added = await queries.addUserMessage(db, id, { author: 'user', text, created_at: laterThan(clock, session.updated_at) }, async (trx) => {
        read = await answerIn(trx, actor.organizationId, id, scribe?.slug ?? '', save);
      });
      if (!added) throw new ConflictError(messages.closed);
      onReplyDue(id);
      return read!;
    },

    /** Staff answer a `waiting` session in the user's place; the scribe replies in turn. */
    async replyAsStaff(actor: Actor, id: string, text: string): Promise<void> {
      if (!text.trim()) throw new ValidationError(messages.replyRequired);
      const session = await this.get(actor.organizationId, id);
      const added = session.state === 'waiting' && (await queries.appendMessageAwaitingReply(db, id, 'waiting', { author: 'staff', text, created_at: isoNow(clock) }));
      if (!added) throw new ValidationError(messages.notWaiting);
      await audit.record(actor, 'session.reply', { type: 'session', id });
      onReplyDue(id);
    },

    /**
     * Cancels a session that is `queued`, `running` or `waiting`; `cancelled` is final. An
     * answer under way stops (`onCancelled`) and records nothing. 409 `Session is closed` for
     * a `completed`, `failed` or `cancelled` session.
     */
    async cancel(actor: Actor, id: string, save?: SaveResponse): Promise<ApiSession> {
      const session = await this.get(actor.organizationId, id);
      const scribe = await findScribeById(db, session.scribe_id);
      let read: ApiSession | undefined;
      const cancelled = await queries.cancelSession(db, id, { text: `Cancelled by ${actor.label}`, created_at: laterThan(clock, session.updated_at) }, async (trx) => {
        await recordEvents(trx, [sessionEvent(session, scribe?.slug ?? '', 'cancelled')]);
        read = await answerIn(trx, actor.organizationId, id, scribe?.slug ?? '', save);
      });
      if (!cancelled) throw new ConflictError(messages.closed);
      await audit.record(actor, 'session.cancel', { type: 'session', id });
      onCancelled(id);
      return read!;
    },

    /** The session's organization, for the admin CLI (which names a session by id alone). */
    async organizationOf(id: string): Promise<string> {
      return (await this.find(id)).organization_id;
    },

    /** A failed session owes its answer again; the note is a system message, which agents skip. */
    async retry(actor: Actor, id: string): Promise<void> {
      await this.failed(actor.organizationId, id);
      const requeued = await queries.appendMessageAwaitingReply(db, id, 'failed', { author: 'system', text: `Retried by ${actor.label}`, created_at: isoNow(clock) });
      if (!requeued) throw new ValidationError(messages.notFailed);
      await audit.record(actor, 'session.retry', { type: 'session', id });
      onReplyDue(id);
    },

    /** Marks a failed session as dealt with: it leaves the console's failures and stays failed. */
    async discard(actor: Actor, id: string): Promise<void> {
      await this.failed(actor.organizationId, id);
      if (!(await queries.discardSession(db, actor.organizationId, id, isoNow(clock)))) throw new ValidationError(messages.alreadyDiscarded);
      await audit.record(actor, 'session.discard', { type: 'session', id });
    },

    async failed(organizationId: string, id: string): Promise<SessionRow> {
      const session = UUID_PATTERN.test(id) ? await queries.findSession(db, organizationId, id) : undefined;
      if (!session) throw new NotFoundError(messages.sessionNotFound);
      if (session.state !== 'failed') throw new ValidationError(messages.notFailed);
      return session;
    },
  };
}
