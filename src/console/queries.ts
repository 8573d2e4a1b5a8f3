import type { Db } from '../db/knex.js';
import type { Position } from '../http/cursor.js';
import type { RequestRow } from '../requests/queries.js';
import { REQUEST_STATUSES, type RequestStatus } from '../requests/schemas.js';
import type { WorkedTaskRow } from '../tasks/queries.js';

/**
 * What the console reads that the API does not: organization-wide lists with filters and
 * the dashboard's figures. Every query takes the organization first and is scoped by it.
 */

export type ReceiptListRow = Pick<RequestRow, 'id' | 'status' | 'title' | 'error_message' | 'entity_id' | 'created_at' | 'updated_at'> & { scribe_slug: string };

/** Receipts by status created since `since`. */
export async function receiptCounts(db: Db, organizationId: string, since: string): Promise<Record<RequestStatus, number>> {
  return statusCounts(await db('requests').where({ organization_id: organizationId }).where('created_at', '>=', since).first(...countsByStatus(db)));
}

/** A time range of created_at, [from, to): one bucket of a chart. */
export interface Bucket {
  from: string;
  to: string;
}

/**
 * Counts of receipts by status, as columns (`count(case ...)`): one pass over the rows with no
 * GROUP BY, whose sort of every row was most of the cost of counting a busy day.
 */
function countsByStatus(db: Db) {
  return REQUEST_STATUSES.map((status) => db.raw(`count(case when status = '${status}' then 1 end) as ${status}`));
}

function statusCounts(row: Record<string, unknown> | undefined): Record<RequestStatus, number> {
  return Object.fromEntries(REQUEST_STATUSES.map((status) => [status, Number(row?.[status] ?? 0)])) as Record<RequestStatus, number>;
}

/**
 * Receipts created in each bucket, by their status now: one range of the index
 * requests_organization_created per bucket, all in one statement. Answers in bucket order.
 */
export async function receiptsByBucket(db: Db, organizationId: string, buckets: Bucket[], scribeId?: string): Promise<Array<Record<RequestStatus, number>>> {
  if (buckets.length === 0) return [];
  const [first, ...rest] = buckets.map(({ from, to }, i) => {
    const query = db('requests').where('organization_id', organizationId).where('created_at', '>=', from).where('created_at', '<', to);
    if (scribeId) query.where('scribe_id', scribeId);
    return query.select(db.raw(`${i} as bucket`), ...countsByStatus(db));
  });
  const rows: Array<Record<string, unknown>> = await first!.unionAll(rest);
  const byBucket = new Map(rows.map((row) => [Number(row.bucket), row]));
  return buckets.map((_, i) => statusCounts(byBucket.get(i)));
}

/**
 * 202 → fulfilled times (ms) of the receipts created in each bucket, of at most `perBucket`
 * of them (the first created in it), so a busy organization's read stays bounded: SQLite has
 * no percentile function, so the caller ranks them. Each bucket's read stops after its
 * `perBucket` rows of the index.
 */
export async function fulfilledLatencies(db: Db, organizationId: string, buckets: Bucket[], perBucket: number): Promise<number[][]> {
  if (buckets.length === 0) return [];
  // Each limited SELECT in a subquery: SQLite takes no LIMIT on a bare member of a UNION.
  const [first, ...rest] = buckets.map(({ from, to }, i) =>
    db
      .from(
        db('requests')
          .where('organization_id', organizationId)
          .where('created_at', '>=', from)
          .where('created_at', '<', to)
          .where('status', 'fulfilled')
          .orderBy('created_at')
          .limit(perBucket)
          .select('created_at', 'completed_at')
          .as(`b${i}`),
      )
      .select(db.raw(`${i} as bucket`), 'created_at', 'completed_at'),
  );
  const rows: Array<{ bucket: number | string; created_at: string; completed_at: string }> = await first!.unionAll(rest);
  const byBucket = buckets.map((): number[] => []);
  for (const row of rows) byBucket[Number(row.bucket)]!.push(Date.parse(row.completed_at) - Date.parse(row.created_at));
  return byBucket;
}

/** Receipts not yet dispatched to the end, and how long the oldest has waited. */
export async function dispatchBacklog(db: Db, organizationId: string): Promise<{ count: number; oldest: string | null }> {
  const row = await db('requests')
    .where({ organization_id: organizationId })
    .whereIn('status', ['accepted', 'dispatched'])
    .first(db.raw('count(*) as count'), db.raw('min(created_at) as oldest'));
  return { count: Number(row?.count ?? 0), oldest: row?.oldest ?? null };
}

/** Sessions owing an answer and tasks not yet worked, and the oldest of them. */
export async function agentBacklog(db: Db, organizationId: string): Promise<{ sessions: number; tasks: number; oldest: string | null }> {
  const sessions = await db('sessions').where({ organization_id: organizationId }).whereRaw('reply_due').first(db.raw('count(*) as n'), db.raw('min(updated_at) as oldest'));
  const tasks = await db('tasks').where({ organization_id: organizationId }).whereIn('status', ['open', 'in_progress']).first(db.raw('count(*) as n'), db.raw('min(updated_at) as oldest'));
  const oldest = [sessions?.oldest, tasks?.oldest].filter((v): v is string => typeof v === 'string').sort()[0] ?? null;
  return { sessions: Number(sessions?.n ?? 0), tasks: Number(tasks?.n ?? 0), oldest };
}

export interface Failure {
  kind: 'receipt' | 'session' | 'task';
  id: string;
  scribe_slug: string;
  what: string;
  message: string;
  at: string;
}

/** The latest failures of each kind, newest first. */
export async function recentFailures(db: Db, organizationId: string, limit = 10): Promise<Failure[]> {
  const receipts = await db('requests as r')
    .join('scribes as s', 's.id', 'r.scribe_id')
    .where('r.organization_id', organizationId)
    .where('r.status', 'failed')
    .orderBy('r.updated_at', 'desc')
    .limit(limit)
    .select('r.id', 's.slug as scribe_slug', 'r.title as what', 'r.error_message as message', 'r.updated_at as at');
  const sessions = await db('sessions as x')
    .join('scribes as s', 's.id', 'x.scribe_id')
    .where('x.organization_id', organizationId)
    .whereNotNull('x.error_message')
    .orderBy('x.updated_at', 'desc')
    .limit(limit)
    .select('x.id', 's.slug as scribe_slug', db.raw("'chat session' as what"), 'x.error_message as message', 'x.updated_at as at');
  const tasks = await db('tasks as t')
    .join('scribes as s', 's.id', 't.scribe_id')
    .where('t.organization_id', organizationId)
    .whereNotNull('t.last_error')
    .orderBy('t.updated_at', 'desc')
    .limit(limit)
    .select('t.id', 's.slug as scribe_slug', 't.title as what', 't.last_error as message', 't.updated_at as at');
  return [
    ...receipts.map((r) => ({ ...r, kind: 'receipt' as const })),
    ...sessions.map((r) => ({ ...r, kind: 'session' as const })),
    ...tasks.map((r) => ({ ...r, kind: 'task' as const })),
  ]
    .sort((a, b) => (a.at < b.at ? 1 : -1))
    .slice(0, limit);
}

export interface ScribeSummary {
  id: string;
  slug: string;
  name: string;
  state: string;
  agent: string;
  open_tasks: number;
  waiting_tasks: number;
  sessions: number;
}

export async function scribesWithCounts(db: Db, organizationId: string): Promise<ScribeSummary[]> {
  return db('scribes as s')
    .where('s.organization_id', organizationId)
    .select(
      's.id',
      's.slug',
      's.name',
      's.state',
      's.agent',
      db('tasks as t').whereRaw('t.scribe_id = s.id').whereIn('t.status', ['open', 'in_progress']).count('*').as('open_tasks'),
      db('tasks as t').whereRaw('t.scribe_id = s.id').where('t.status', 'waiting').count('*').as('waiting_tasks'),
      db('sessions as x').whereRaw('x.scribe_id = s.id').count('*').as('sessions'),
    )
    .orderBy('s.slug');
}

export interface ListPage<T> {
  items: T[];
  /** Keyset position of the last item when more follow. */
  next: Position | null;
}

/** Newest first, strictly before `before`; `limit + 1` read to tell whether more follow. */
async function newestFirst<T extends { created_at: string; id: string }>(query: ReturnType<Db>, alias: string, before: Position | undefined, limit: number): Promise<ListPage<T>> {
  if (before) query.whereRaw(`(${alias}.created_at, ${alias}.id) < (?, ?)`, [before.createdAt, before.id]);
  const rows = (await query.orderBy([{ column: `${alias}.created_at`, order: 'desc' }, { column: `${alias}.id`, order: 'desc' }]).limit(limit + 1)) as T[];
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, next: rows.length > limit && last ? { createdAt: last.created_at, id: last.id } : null };
}

export async function listReceipts(
  db: Db,
  organizationId: string,
  filter: { scribeId?: string; status?: string; since?: string; before?: Position; limit: number },
): Promise<ListPage<ReceiptListRow>> {
  const query = db('requests as r')
    .join('scribes as s', 's.id', 'r.scribe_id')
    .where('r.organization_id', organizationId)
    .select('r.id', 'r.status', 'r.title', 'r.error_message', 'r.entity_id', 'r.created_at', 'r.updated_at', 's.slug as scribe_slug');
  if (filter.scribeId) query.where('r.scribe_id', filter.scribeId);
  if (filter.status) query.where('r.status', filter.status);
  if (filter.since) query.where('r.created_at', '>=', filter.since);
  return newestFirst(query, 'r', filter.before, filter.limit);
}

export type TaskListRow = Pick<WorkedTaskRow, 'id' | 'status' | 'title' | 'request_id' | 'last_error' | 'created_at' | 'updated_at'> & { scribe_slug: string };

export async function listTasks(
  db: Db,
  organizationId: string,
  filter: { scribeId?: string; status?: string; before?: Position; limit: number },
): Promise<ListPage<TaskListRow>> {
  const query = db('tasks as t')
    .join('scribes as s', 's.id', 't.scribe_id')
    .where('t.organization_id', organizationId)
    .select('t.id', 't.status', 't.title', 't.request_id', 't.last_error', 't.created_at', 't.updated_at', 's.slug as scribe_slug');
  if (filter.scribeId) query.where('t.scribe_id', filter.scribeId);
  if (filter.status) query.where('t.status', filter.status);
  return newestFirst(query, 't', filter.before, filter.limit);
}

/** A receipt of the organization with everything its page shows. */
export async function findReceipt(db: Db, organizationId: string, id: string) {
  const receipt = await db('requests as r')
    .join('scribes as s', 's.id', 'r.scribe_id')
    .where({ 'r.id': id, 'r.organization_id': organizationId })
    .first('r.*', 's.slug as scribe_slug');
  if (!receipt) return undefined;
  const attachments = await db('attachments').where({ request_id: id }).orderBy('position');
  const task = receipt.entity_id ? await db('tasks').where({ id: receipt.entity_id, organization_id: organizationId }).first('id', 'status', 'title') : undefined;
  return { receipt: receipt as RequestRow & { scribe_slug: string }, attachments, task: task as Pick<WorkedTaskRow, 'id' | 'status' | 'title'> | undefined };
}

/** Deletes console sign-in sessions that expired before `now`. */
export async function deleteExpiredConsoleSessions(db: Db, now: string): Promise<number> {
  return db('console_sessions').where('expired', '<', now).delete();
}

export type ConsoleReads = ReturnType<typeof createConsoleReads>;

/** The console's reads bound to the database, as its routes call them (routes never hold the database). */
export function createConsoleReads(db: Db) {
  return {
    receiptCounts: (organizationId: string, since: string) => receiptCounts(db, organizationId, since),
    receiptsByBucket: (organizationId: string, buckets: Bucket[], scribeId?: string) => receiptsByBucket(db, organizationId, buckets, scribeId),
    fulfilledLatencies: (organizationId: string, buckets: Bucket[], perBucket: number) => fulfilledLatencies(db, organizationId, buckets, perBucket),
    dispatchBacklog: (organizationId: string) => dispatchBacklog(db, organizationId),
    agentBacklog: (organizationId: string) => agentBacklog(db, organizationId),
    recentFailures: (organizationId: string, limit?: number) => recentFailures(db, organizationId, limit),
    scribesWithCounts: (organizationId: string) => scribesWithCounts(db, organizationId),
    listReceipts: (organizationId: string, options: Parameters<typeof listReceipts>[2]) => listReceipts(db, organizationId, options),
    listTasks: (organizationId: string, options: Parameters<typeof listTasks>[2]) => listTasks(db, organizationId, options),
    findReceipt: (organizationId: string, id: string) => findReceipt(db, organizationId, id),
  };
}
