import type { Db } from '../db/knex.js';
import { claimDue, renewLeases, type Queue } from '../db/claims.js';
import type { Position } from '../http/cursor.js';
import type { RequestStatus } from './schemas.js';
import type { ScribeRef, ScribeState } from '../scribes/queries.js';

export interface RequestRow {
  id: string;
  organization_id: string;
  scribe_id: string;
  status: RequestStatus;
  entity_type: string;
  entity_id: string | null;
  error_message: string | null;
  title: string;
  summary: string;
  acceptance_criteria: string | null;
  available_at: string;
  claim_token: string | null;
  attempts: number;
  dispatched_at: string | null;
  completed_at: string | null;
  /** Where it came from when not from the API (a schedule, a channel); null for the API. */
  origin_type: 'schedule' | 'channel' | null;
  origin_id: string | null;
  /** The failed receipt this one retries (staff pressed "Retry"); one retry per receipt. */
  retry_of: string | null;
  /** When staff marked this failure as dealt with; it stays failed for its clients. */
  discarded_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface AttachmentRow {
  id: string;
  request_id: string;
  position: number;
  url: string;
  filename: string;
  content_type: string;
  size_bytes: number;
  sha256: string;
  created_at: string;
}

/** The columns the API shows; reading fewer columns is most of a lookup's cost. */
const API_COLUMNS = ['id', 'status', 'entity_type', 'entity_id', 'error_message', 'created_at', 'updated_at'] as const;
export type ApiRequestRow = Pick<RequestRow, (typeof API_COLUMNS)[number]>;

/** A receipt as the API shows it, with its scribe's slug (what the API calls `scribe_id`). */
export type ApiRequestRowWithSlug = ApiRequestRow & { scribe_slug: string };

/** Stores a receipt with its attachments; `alongside` writes more in the same transaction (the audit event). */
export async function insertRequest(db: Db, request: RequestRow, attachments: readonly AttachmentRow[], alongside?: (trx: Db) => Promise<void>): Promise<void> {
  if (attachments.length === 0 && !alongside) {
    await db('requests').insert(request);
    return;
  }
  await db.transaction(async (trx) => {
    await trx('requests').insert(request);
    if (attachments.length > 0) await trx('attachments').insert(attachments);
    await alongside?.(trx);
  });
}

/** One receipt of an organization, by primary key. */
export async function findRequest(db: Db, organizationId: string, id: string): Promise<ApiRequestRowWithSlug | undefined> {
  return db('requests')
    .join('scribes', 'scribes.id', 'requests.scribe_id')
    .where({ 'requests.id': id, 'requests.organization_id': organizationId })
    .first(...API_COLUMNS.map((column) => `requests.${column}`), 'scribes.slug as scribe_slug');
}

/**
 * A page of a scribe's receipts, newest first, strictly after `after` (keyset paging on
 * the requests_scribe_created / requests_scribe_status_created indexes).
 */
export async function listRequests(
  db: Db,
  filter: { scribeId: string; status?: RequestStatus; entityType?: string },
  page: { limit: number; after?: Position },
): Promise<ApiRequestRow[]> {
  const query = db<RequestRow>('requests')
    .select(...API_COLUMNS)
    .where('scribe_id', filter.scribeId);
  if (filter.status) query.where('status', filter.status);
  if (filter.entityType) query.where('entity_type', filter.entityType);
  if (page.after) query.whereRaw('(created_at, id) < (?, ?)', [page.after.createdAt, page.after.id]);
  return query
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(page.limit);
}

/** One receipt of an organization with every column (its task input among them), and its scribe. */
export async function findRequestRow(db: Db, organizationId: string, id: string): Promise<(RequestRow & { scribe: ScribeRef }) | undefined> {
  const row = await db('requests')
    .join('scribes', 'scribes.id', 'requests.scribe_id')
    .where({ 'requests.id': id, 'requests.organization_id': organizationId })
    .first('requests.*', 'scribes.slug as scribe_slug', 'scribes.state as scribe_state');
  if (!row) return undefined;
  const { scribe_slug: slug, scribe_state: state, ...request } = row;
  return { ...request, scribe: { id: request.scribe_id, organization_id: organizationId, slug, state } };
}

/** The receipt that retries `id`, if there is one (the requests_one_retry index). */
export async function findRetryOf(db: Db, id: string): Promise<Pick<RequestRow, 'id' | 'status'> | undefined> {
  return db<RequestRow>('requests').where({ retry_of: id }).first('id', 'status');
}

/** Marks a failed receipt as dealt with; false when it is not failed or already discarded. */
export async function discardRequest(db: Db, organizationId: string, id: string, at: string): Promise<boolean> {
  const updated = await db('requests').where({ id, organization_id: organizationId, status: 'failed' }).whereNull('discarded_at').update({ discarded_at: at });
  return updated === 1;
}

export async function listAttachments(db: Db, requestId: string): Promise<AttachmentRow[]> {
  return db<AttachmentRow>('attachments').where({ request_id: requestId }).orderBy('position');
}

/** The files of several receipts, in each receipt's order. */
export async function listAttachmentsOf(db: Db, requestIds: readonly string[]): Promise<AttachmentRow[]> {
  if (requestIds.length === 0) return [];
  return db<AttachmentRow>('attachments')
    .whereIn('request_id', requestIds)
    .orderBy([{ column: 'request_id' }, { column: 'position' }]);
}

// ---- the dispatcher's queue -------------------------------------------------------------

/** Receipts to dispatch: new ones (`accepted`) and ones whose lease or backoff ran out (`dispatched`, e.g. left by a crash). */
const dispatchQueue: Queue = {
  table: 'requests',
  // (available_at, id), where status in ('accepted', 'dispatched').
  index: 'requests_dispatch_queue',
  due: (query, now) => query.whereRaw("status in ('accepted', 'dispatched')").where('available_at', '<=', now),
  order: ['available_at', 'id'],
  leaseColumn: 'available_at',
};

/** A claimed receipt with its scribe as it was at the claim: whether it still takes work, and its slug for the receipt's event. */
export type ClaimedRequest = RequestRow & { scribe_state: ScribeState; scribe_slug: string };

/**
 * Claims up to `limit` due receipts for `token` (db/claims.ts: one statement, so no two
 * dispatchers, in any process, claim the same receipt); the claim token proves ownership later.
 * Each comes with its scribe's state and slug, read by the same statement.
 */
export async function claimDueRequests(
  db: Db,
  { now, nowPlus1ms, leaseUntil, token, limit }: { now: string; nowPlus1ms: string; leaseUntil: string; token: string; limit: number },
): Promise<ClaimedRequest[]> {
  return claimDue<ClaimedRequest>(db, dispatchQueue, {
    now,
    limit,
    set: {
      status: 'dispatched',
      claim_token: token,
      available_at: leaseUntil,
      attempts: db.raw('attempts + 1'),
      dispatched_at: db.raw('coalesce(dispatched_at, ?)', [now]),
      // A receipt accepted in this very millisecond still gets a later updated_at.
      updated_at: db.raw('case when updated_at < ? then ? else ? end', [now, now, nowPlus1ms]),
    },
    alongside: [
      db.raw('(select s.state from scribes s where s.id = requests.scribe_id) as scribe_state'),
      db.raw('(select s.slug from scribes s where s.id = requests.scribe_id) as scribe_slug'),
    ],
  });
}

/** Extends the lease of receipts still claimed by `token` while their batch is completed. */
export function renewRequestLeases(db: Db, claim: { ids: readonly string[]; token: string }, leaseUntil: string): Promise<number> {
  return renewLeases(db, dispatchQueue, claim, leaseUntil);
}

/** How a dispatched receipt ends: with its task, or failed for a reason. */
export type RequestOutcome = { status: 'fulfilled' } | { status: 'failed'; errorMessage: string };

/**
 * Ends claimed receipts with one outcome, in one statement; a fulfilled receipt's entity is its
 * task, inserted before in the same transaction. How many it ended: fewer than `claim.ids`
 * when a claim was lost (another dispatcher took the receipt over).
 */
export async function finishClaimedRequests(db: Db, claim: { ids: readonly string[]; token: string }, outcome: RequestOutcome, now: string): Promise<number> {
  if (claim.ids.length === 0) return 0;
  return db('requests')
    .whereIn('id', claim.ids)
    .where({ claim_token: claim.token, status: 'dispatched' })
    .update({
      status: outcome.status,
      // tasks_request_id_unique: one task per receipt.
      entity_id: outcome.status === 'fulfilled' ? db.raw('(select t.id from tasks t where t.request_id = requests.id)') : null,
      error_message: outcome.status === 'failed' ? outcome.errorMessage : null,
      claim_token: null,
      completed_at: now,
      updated_at: now,
    });
}

/**
 * Gives a claimed receipt back for another try at `retryAt`. A hand-back (`attempted: false`,
 * a shutdown) is no attempt: only dispatches that failed or whose process died count towards giving up.
 */
export async function releaseClaimedRequest(db: Db, claim: { id: string; token: string }, retryAt: string, { attempted }: { attempted: boolean }): Promise<void> {
  await db('requests')
    .where({ id: claim.id, claim_token: claim.token, status: 'dispatched' })
    .update({ claim_token: null, available_at: retryAt, ...(attempted ? {} : { attempts: db.raw('attempts - 1') }) });
}
