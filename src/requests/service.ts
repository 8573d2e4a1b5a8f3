import type { Db } from '../db/knex.js';
import type { Actor, AuditLog } from '../audit/service.js';
import type { Clock } from '../lib/clock.js';
import { REQUEST_ID_PATTERN, newId, newRequestId } from '../lib/ids.js';
import { decodeAfter, keysetPage } from '../http/cursor.js';
import { NotFoundError, ValidationError } from '../http/errors.js';
import { messages as scribeMessages, type ScribeRef } from '../scribes/service.js';
import type { AttachmentFetcher, FetchedAttachment } from './attachments/fetch.js';
import * as queries from './queries.js';
import type { ApiRequestRow, RequestRow } from './queries.js';
import type { RequestStatus, SubmitRequestBody } from './schemas.js';
import { titleFromSummary } from './title.js';
import { dialectOf } from '../db/dialect.js';

export const messages = {
  requestNotFound: 'Request not found',
  notFailed: 'Only a failed receipt can be retried or discarded',
  alreadyRetried: 'This receipt has already been retried',
  alreadyDiscarded: 'This receipt has already been discarded',
};

/** A receipt as the API shows it: exactly these eight fields. */
export interface ApiRequest {
  id: string;
  scribe_id: string;
  status: RequestStatus;
  entity_type: string;
  entity_id: string | null;
  error_message: string | null;
  created_at: string;
  updated_at: string;
}

export function presentRequest(row: ApiRequestRow, scribeSlug: string): ApiRequest {
  return {
    id: row.id,
    scribe_id: scribeSlug,
    status: row.status,
    entity_type: row.entity_type,
    entity_id: row.entity_id,
    error_message: row.error_message,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export type RequestService = ReturnType<typeof createRequestService>;

/** Where a receipt came from when not from the API: a schedule's fire or an inbound channel. */
export interface Origin {
  type: 'schedule' | 'channel';
  id: string;
}

export interface SubmitOptions {
  /** Who submits, for the audit log. */
  actor?: Actor;
  origin?: Origin;
  /** More to write in the receipt's transaction (the idempotent response, a schedule's fire). */
  alongside?: (trx: Db, receipt: ApiRequest) => Promise<void>;
  /** Files already in the attachment store (an email's), instead of downloading `task.attachments`. */
  files?: FetchedAttachment[];
  /** The failed receipt this one retries. */
  retryOf?: string;
}

export function createRequestService(deps: {
  db: Db;
  clock: Clock;
  fetchAttachments: AttachmentFetcher;
  audit: AuditLog;
  /** Runs after a receipt was stored, with its id (wakes the dispatchers). */
  onAccepted: (id: string) => void;
}) {
  const { db, clock } = deps;

  return {
    /**
     * Accepts a task for an active scribe: downloads its attachments (all or none), stores
     * the receipt as `accepted` and hands it to the dispatcher. Rules after validation, in
     * the documented order (docs/api.md): 422 `Scribe is not active`, then 422
     * `Attachment download failed: …`.
     */
    async submit(scribe: ScribeRef, body: SubmitRequestBody, { actor, origin, alongside, files: stored, retryOf }: SubmitOptions = {}): Promise<ApiRequest> {
      if (scribe.state !== 'active') throw new ValidationError(scribeMessages.scribeNotActive);
      const { task } = body;
      const files = stored ?? (await deps.fetchAttachments(task.attachments ?? []));

      const now = clock();
      const at = now.toISOString();
      const row: RequestRow = {
        id: newRequestId(now),
        organization_id: scribe.organization_id,
        scribe_id: scribe.id,
        status: 'accepted',
        entity_type: 'task',
        entity_id: null,
        error_message: null,
        title: task.title?.trim() || titleFromSummary(task.summary),
        summary: task.summary,
        acceptance_criteria: task.acceptance_criteria ?? null,
        available_at: at,
        claim_token: null,
        attempts: 0,
        dispatched_at: null,
        completed_at: null,
        origin_type: origin?.type ?? null,
        origin_id: origin?.id ?? null,
        retry_of: retryOf ?? null,
        discarded_at: null,
        created_at: at,
        updated_at: at,
      };
      const attachments = files.map((file) => ({
        id: newId(),
        request_id: row.id,
        position: file.position,
        url: file.url,
        filename: file.filename,
        content_type: file.contentType,
        size_bytes: file.sizeBytes,
        sha256: file.sha256,
        created_at: at,
      }));
      const receipt = presentRequest(row, scribe.slug);
      // The audit event and what the caller adds are written with the receipt, or not at all.
      await queries.insertRequest(
        db,
        row,
        attachments,
        actor || alongside
          ? async (trx) => {
              if (actor) await deps.audit.record(actor, 'request.submit', { type: 'request', id: row.id }, row.title, trx);
              await alongside?.(trx, receipt);
            }
          : undefined,
      );
      deps.onAccepted(row.id);
      return receipt;
    },

    /**
     * Submits a failed receipt's task again, with its files, as a new receipt that names the
     * failed one (`retry_of`). Once per receipt: the requests_one_retry index refuses a second,
     * whoever presses the button, in whichever process.
     */
    async retry(actor: Actor, id: string): Promise<ApiRequest> {
      const failed = await this.failedRow(actor.organizationId, id);
      if (await queries.findRetryOf(db, id)) throw new ValidationError(messages.alreadyRetried);
      const files = (await queries.listAttachments(db, id)).map((a) => ({
        position: a.position,
        url: a.url,
        filename: a.filename,
        contentType: a.content_type,
        sizeBytes: a.size_bytes,
        sha256: a.sha256,
      }));
      const task = { title: failed.title, summary: failed.summary, acceptance_criteria: failed.acceptance_criteria };
      try {
        return await this.submit(
          failed.scribe,
          { task },
          {
            files,
            retryOf: id,
            alongside: (trx, receipt) => deps.audit.record(actor, 'request.retry', { type: 'request', id }, `retried as ${receipt.id}`, trx),
          },
        );
      } catch (err) {
        if (dialectOf(db).isUniqueViolation(err)) throw new ValidationError(messages.alreadyRetried);
        throw err;
      }
    },

    /** Marks a failed receipt as dealt with: it leaves the console's failures, and stays `failed` for its clients. */
    async discard(actor: Actor, id: string): Promise<void> {
      await this.failedRow(actor.organizationId, id);
      if (!(await queries.discardRequest(db, actor.organizationId, id, clock().toISOString()))) throw new ValidationError(messages.alreadyDiscarded);
      await deps.audit.record(actor, 'request.discard', { type: 'request', id });
    },

    /** The receipt with every column; 404 unless it is the organization's, 422 unless it failed. */
    async failedRow(organizationId: string, id: string) {
      const row = REQUEST_ID_PATTERN.test(id) ? await queries.findRequestRow(db, organizationId, id) : undefined;
      if (!row) throw new NotFoundError(messages.requestNotFound);
      if (row.status !== 'failed') throw new ValidationError(messages.notFailed);
      return row;
    },

    /** One receipt of the organization; 404 `Request not found` for any other id. */
    async get(organizationId: string, id: string): Promise<ApiRequest> {
      const row = REQUEST_ID_PATTERN.test(id) ? await queries.findRequest(db, organizationId, id) : undefined;
      if (!row) throw new NotFoundError(messages.requestNotFound);
      return presentRequest(row, row.scribe_slug);
    },

    /** A page of the scribe's receipts, newest first; `next_cursor` is null on the last page. */
    async list(
      scribe: ScribeRef,
      options: { status?: RequestStatus; entityType?: string; limit: number; after?: unknown },
    ): Promise<{ requests: ApiRequest[]; next_cursor: string | null }> {
      const after = decodeAfter(options.after, (id) => REQUEST_ID_PATTERN.test(id));
      const rows = await queries.listRequests(db, { scribeId: scribe.id, status: options.status, entityType: options.entityType }, { limit: options.limit + 1, after });
      const page = keysetPage(rows, options.limit);
      return { requests: page.items.map((row) => presentRequest(row, scribe.slug)), next_cursor: page.nextCursor };
    },
  };
}
