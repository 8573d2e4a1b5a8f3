import type { Knex } from 'knex';
import type { Db } from '../db/knex.js';
import { REQUEST_ID_PATTERN, UUID_PATTERN } from '../lib/ids.js';
import { dialectOf } from '../db/dialect.js';
import { readKeysetPage, type KeysetPage, type PageAt } from '../db/keyset.js';
import { SESSION_STATES, type SessionRow } from '../sessions/queries.js';
import { findRetryOf, listAttachments, type RequestRow } from '../requests/queries.js';
import { REQUEST_STATUSES, type RequestStatus } from '../requests/schemas.js';
import { TASK_STATUSES, type WorkedTaskRow } from '../tasks/queries.js';
import { agentWork } from '../runtime/queries.js';

/**
 * What the console reads that the API does not: organization-wide lists with filters and
 * the dashboard's figures. Every query takes the organization first and is scoped by it.
 */

export type ReceiptListRow = Pick<RequestRow, 'id' | 'status' | 'title' | 'error_message' | 'entity_id' | 'discarded_at' | 'created_at' | 'updated_at'> & { scribe_slug: string };

/** Receipts by status created since `since`. */
export async function receiptCounts(db: Db, organizationId: string, since: string): Promise<Record<RequestStatus, number>> {
  return statusCounts(
    await db('requests')
      .where({ organization_id: organizationId })
      .where('created_at', '>=', since)
      .first(...countsByStatus(db)),
  );
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

/** Work of the agent runtime: sessions owing an answer, tasks open or in progress. */
export interface AgentWork {
  sessions: number;
  tasks: number;
  oldest: string | null;
}

/**
 * The agent runtime's backlog: work waiting for an active scribe, and the oldest of it
 * (`waiting`); apart, work queued for a scribe that is not active (`parked`), which waits
 * until the scribe is powered on and so does not drain.
 */
export async function agentBacklog(db: Db, organizationId: string): Promise<{ waiting: AgentWork; parked: AgentWork }> {
  // By the scribes of the organization: their tasks are then an index range per scribe and status, not a scan.
  const count = (table: 'sessions' | 'tasks', active: boolean) =>
    agentWork(db, table, { active }).where('s.organization_id', organizationId).first(db.raw('count(*) as n'), db.raw('min(w.updated_at) as oldest'));
  const work = async (active: boolean): Promise<AgentWork> => {
    const [sessions, tasks] = await Promise.all([count('sessions', active), count('tasks', active)]);
    const oldest = [sessions?.oldest, tasks?.oldest].filter((v): v is string => typeof v === 'string').sort()[0] ?? null;
    return { sessions: Number(sessions?.n ?? 0), tasks: Number(tasks?.n ?? 0), oldest };
  };
  const [waiting, parked] = await Promise.all([work(true), work(false)]);
  return { waiting, parked };
}

export interface Failure {
  kind: 'receipt' | 'session' | 'task';
  id: string;
  scribe_slug: string;
  what: string;
  message: string;
  at: string;
}

/** Tasks the agent failed: the runtime leaves them waiting with the reason in last_error. */
const failedTasks = (alias: string) => (query: Knex.QueryBuilder) => query.where(`${alias}.status`, 'waiting').whereNotNull(`${alias}.last_error`);

/**
 * The latest failures of each kind not yet dealt with, newest first: not discarded, and (a
 * receipt) not retried, since its retry is a receipt of its own and shows here if it fails
 * too. A retried task or session is no longer failed.
 */
export async function recentFailures(db: Db, organizationId: string, limit = 10): Promise<Failure[]> {
  const receipts = await db('requests as r')
    .join('scribes as s', 's.id', 'r.scribe_id')
    .where('r.organization_id', organizationId)
    .where('r.status', 'failed')
    .whereNull('r.discarded_at')
    .whereNotExists(db('requests as retry').whereRaw('retry.retry_of = r.id').select(db.raw('1')))
    .orderBy('r.updated_at', 'desc')
    .limit(limit)
    .select('r.id', 's.slug as scribe_slug', 'r.title as what', 'r.error_message as message', 'r.updated_at as at');
  const sessions = await db('sessions as x')
    .join('scribes as s', 's.id', 'x.scribe_id')
    .where('x.organization_id', organizationId)
    .where('x.state', 'failed')
    .whereNull('x.discarded_at')
    .orderBy('x.updated_at', 'desc')
    .limit(limit)
    .select('x.id', 's.slug as scribe_slug', db.raw("'chat session' as what"), 'x.error_message as message', 'x.updated_at as at');
  const tasks: Array<Omit<Failure, 'kind'>> = await db('tasks as t')
    .join('scribes as s', 's.id', 't.scribe_id')
    .where('t.organization_id', organizationId)
    .modify(failedTasks('t'))
    .whereNull('t.discarded_at')
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

/** The console's lists page on `(created_at, id)`, newest first (db/keyset.ts). */
const byCreatedAt = (alias: string) => ({ columns: [`${alias}.created_at`, `${alias}.id`], keyOf: (row: { created_at: string; id: string }) => [row.created_at, row.id] });

export interface ListFilter {
  scribeId?: string;
  status?: string;
  at?: PageAt;
  limit: number;
  /** Count the filters' total too (lists with a pager); a scribe page's short list does not. */
  countTotal?: boolean;
}

/** What the receipts list and its bulk actions select by. */
export interface ReceiptFilter {
  scribeId?: string;
  status?: string;
  since?: string;
  /** Text the title contains, any case. */
  q?: string;
}

function filterReceipts(db: Db, query: Knex.QueryBuilder, filter: ReceiptFilter): Knex.QueryBuilder {
  if (filter.scribeId) query.where('r.scribe_id', filter.scribeId);
  if (filter.status) query.where('r.status', filter.status);
  if (filter.since) query.where('r.created_at', '>=', filter.since);
  if (filter.q) dialectOf(db).whereContains(query, 'r.title', filter.q);
  return query;
}

export async function listReceipts(db: Db, organizationId: string, filter: ListFilter & ReceiptFilter): Promise<KeysetPage<ReceiptListRow>> {
  const query = db('requests as r')
    .join('scribes as s', 's.id', 'r.scribe_id')
    .where('r.organization_id', organizationId)
    .select('r.id', 'r.status', 'r.title', 'r.error_message', 'r.entity_id', 'r.discarded_at', 'r.created_at', 'r.updated_at', 's.slug as scribe_slug');
  return readKeysetPage<ReceiptListRow>(db, filterReceipts(db, query, filter), byCreatedAt('r'), filter.at ?? {}, filter.limit, { countTotal: filter.countTotal });
}

export type TaskListRow = Pick<WorkedTaskRow, 'id' | 'status' | 'title' | 'request_id' | 'last_error' | 'discarded_at' | 'created_at' | 'updated_at'> & { scribe_slug: string };

/** The tasks list's status filter: the task statuses, and `failed` (waiting after the agent failed). */
export const TASK_FILTER_STATUSES = [...TASK_STATUSES, 'failed'] as const;

export interface TaskFilter {
  scribeId?: string;
  status?: string;
  q?: string;
}

function filterTasks(db: Db, query: Knex.QueryBuilder, filter: TaskFilter): Knex.QueryBuilder {
  if (filter.scribeId) query.where('t.scribe_id', filter.scribeId);
  if (filter.status === 'failed') query.modify(failedTasks('t'));
  else if (filter.status) query.where('t.status', filter.status);
  if (filter.q) dialectOf(db).whereContains(query, 't.title', filter.q);
  return query;
}

export async function listTasks(db: Db, organizationId: string, filter: ListFilter & TaskFilter): Promise<KeysetPage<TaskListRow>> {
  const query = db('tasks as t')
    .join('scribes as s', 's.id', 't.scribe_id')
    .where('t.organization_id', organizationId)
    .select('t.id', 't.status', 't.title', 't.request_id', 't.last_error', 't.discarded_at', 't.created_at', 't.updated_at', 's.slug as scribe_slug');
  return readKeysetPage<TaskListRow>(db, filterTasks(db, query, filter), byCreatedAt('t'), filter.at ?? {}, filter.limit, { countTotal: filter.countTotal });
}

/**
 * The failures a bulk action would act on: those matching the list's filters, failed, not
 * yet retried (retry) or discarded (discard), and created by `upto` (the moment the preview
 * was shown, so what arrives after it is left alone). `total` counts them all; `ids` are
 * the oldest `limit`.
 */
export async function bulkSelection(
  db: Db,
  organizationId: string,
  kind: 'receipts' | 'tasks' | 'sessions',
  action: 'retry' | 'discard',
  filter: ReceiptFilter & TaskFilter & SessionFilter,
  upto: string,
  limit: number,
): Promise<{ total: number; ids: string[] }> {
  const failed = { ...filter, status: 'failed' };
  const [query, alias] =
    kind === 'receipts'
      ? [filterReceipts(db, db('requests as r').where('r.organization_id', organizationId), failed), 'r']
      : kind === 'tasks'
        ? [filterTasks(db, db('tasks as t').where('t.organization_id', organizationId), failed), 't']
        : [filterSessions(db, organizationId, failed), 'x'];
  query.where(`${alias}.created_at`, '<=', upto);
  if (action === 'discard') query.whereNull(`${alias}.discarded_at`);
  // A receipt is retried once (requests_one_retry); a retried task or session is no longer failed.
  if (action === 'retry' && kind === 'receipts') query.whereNotExists(db('requests as retry').whereRaw('retry.retry_of = r.id').select(db.raw('1')));
  const [count, rows] = await Promise.all([
    query.clone().count({ n: '*' }).first(),
    query
      .clone()
      .orderBy([
        { column: `${alias}.created_at`, order: 'asc' },
        { column: `${alias}.id`, order: 'asc' },
      ])
      .limit(limit)
      .select(`${alias}.id`),
  ]);
  return { total: Number((count as { n?: number | string } | undefined)?.n ?? 0), ids: (rows as Array<{ id: string }>).map((r) => r.id) };
}

export type SessionListRow = Pick<SessionRow, 'id' | 'state' | 'reply_due' | 'error_message' | 'discarded_at' | 'created_at' | 'updated_at'> & {
  scribe_slug: string;
  first_message: string | null;
  /** With a text filter: the session's first message that contains the text. */
  matching_message?: string | null;
};

/** What the sessions list narrows to: `reply_due` (the scribe owes an answer) or one of the states. */
export const SESSION_FILTERS = ['reply_due', ...SESSION_STATES] as const;

/** Search looks through this many of the newest sessions the other filters give, no more. */
export const SESSION_SEARCH_WINDOW = 2000;

export interface SessionFilter {
  scribeId?: string;
  /** `reply_due` or a state (SESSION_FILTERS). */
  status?: string;
  /** Text any of the session's messages contains, any case (what users, staff and the scribe wrote; not the system's notes). */
  text?: string;
}

/** The messages a text filter looks through: the conversation's own, not the system's notes (a failure's reason). */
const SEARCHED_AUTHORS = ['user', 'staff', 'scribe'];

/** The messages of the session `x` that contain `text`, any case (the dialect's LIKE). */
function messagesContaining(db: Db, text: string): Knex.QueryBuilder {
  const query = db('session_messages as m').whereRaw('m.session_id = x.id').whereIn('m.author', SEARCHED_AUTHORS);
  dialectOf(db).whereContains(query, 'm.text', text);
  return query;
}

/** The sessions of the organization `filter` selects, as `sessions as x`. */
function filterSessions(db: Db, organizationId: string, filter: SessionFilter): Knex.QueryBuilder {
  const narrow = (query: Knex.QueryBuilder, alias: string) => {
    query.where(`${alias}.organization_id`, organizationId);
    if (filter.scribeId) query.where(`${alias}.scribe_id`, filter.scribeId);
    if (filter.status === 'reply_due') query.whereRaw('??', [`${alias}.reply_due`]);
    else if (filter.status) query.where(`${alias}.state`, filter.status);
    return query;
  };
  const query = narrow(db('sessions as x'), 'x');
  if (filter.text) {
    // A substring of any message, in any case (the dialect's LIKE). No index serves a
    // substring, so the search is bounded: it reads the messages of the newest
    // SESSION_SEARCH_WINDOW sessions the other filters give (by the sessions' own indexes
    // and session_messages (session_id, id)), however many match.
    const newest = narrow(db('sessions as w'), 'w')
      .orderBy([
        { column: 'w.created_at', order: 'desc' },
        { column: 'w.id', order: 'desc' },
      ])
      .limit(SESSION_SEARCH_WINDOW)
      .select('w.id');
    query.whereIn('x.id', newest).whereExists(messagesContaining(db, filter.text).select(db.raw('1')));
  }
  return query;
}

export async function listSessions(db: Db, organizationId: string, filter: ListFilter & SessionFilter): Promise<KeysetPage<SessionListRow>> {
  const query = filterSessions(db, organizationId, filter)
    .join('scribes as s', 's.id', 'x.scribe_id')
    .select(
      'x.id',
      'x.state',
      'x.reply_due',
      'x.error_message',
      'x.discarded_at',
      'x.created_at',
      'x.updated_at',
      's.slug as scribe_slug',
      db('session_messages as m').where('m.session_id', db.ref('x.id')).orderBy('m.id').limit(1).select('m.text').as('first_message'),
    );
  // Like first_message: one lookup per listed session, by session_messages (session_id, id).
  if (filter.text) query.select(messagesContaining(db, filter.text).orderBy('m.id').limit(1).select('m.text').as('matching_message'));
  return readKeysetPage<SessionListRow>(db, query, byCreatedAt('x'), filter.at ?? {}, filter.limit, { countTotal: filter.countTotal });
}

/** A receipt of the organization with everything its page shows. */
export async function findReceipt(db: Db, organizationId: string, id: string) {
  const receipt = await db('requests as r')
    .join('scribes as s', 's.id', 'r.scribe_id')
    .where({ 'r.id': id, 'r.organization_id': organizationId })
    .first('r.*', 's.slug as scribe_slug');
  if (!receipt) return undefined;
  const attachments = await listAttachments(db, id);
  const task = receipt.entity_id ? await db('tasks').where({ id: receipt.entity_id, organization_id: organizationId }).first('id', 'status', 'title') : undefined;
  // A retry is made for the failed receipt's own scribe, so it is of this organization too.
  const retriedAs = await findRetryOf(db, id);
  return {
    receipt: receipt as RequestRow & { scribe_slug: string },
    attachments,
    task: task as Pick<WorkedTaskRow, 'id' | 'status' | 'title'> | undefined,
    retriedAs,
  };
}

/** The console pages an id can name, by table (each table's ids are unique across the organization). */
const PAGES_BY_ID: Array<[table: string, page: string]> = [
  ['tasks', '/tasks/'],
  ['sessions', '/sessions/'],
  ['entries', '/entries/'],
  ['entry_types', '/entry-types/'],
  ['schedules', '/schedules/'],
  ['channels', '/channels/'],
  ['webhook_endpoints', '/webhooks/'],
];

/**
 * The page of whatever `text` names exactly: a receipt id, another record's id, or a
 * scribe's slug; undefined when nothing of the organization has it. Primary-key and
 * unique-index lookups only.
 */
export async function pageNamedBy(db: Db, organizationId: string, text: string): Promise<string | undefined> {
  if (REQUEST_ID_PATTERN.test(text)) {
    return (await db('requests').where({ id: text, organization_id: organizationId }).first('id')) ? `/receipts/${text}` : undefined;
  }
  const id = text.toLowerCase();
  if (UUID_PATTERN.test(id)) {
    for (const [table, page] of PAGES_BY_ID) {
      if (await db(table).where({ id, organization_id: organizationId }).first('id')) return `${page}${id}`;
    }
    return undefined;
  }
  const scribe = await db('scribes').where({ organization_id: organizationId, slug: id }).first('slug');
  return scribe ? `/b/${scribe.slug}` : undefined;
}

/** Scribes whose name or slug contains `text`, any case. */
export async function scribesMatching(db: Db, organizationId: string, text: string, limit: number): Promise<Array<{ slug: string; name: string; state: string }>> {
  const query = db('scribes').where('organization_id', organizationId);
  const { whereContains } = dialectOf(db);
  query.where((q) => {
    whereContains(q, 'name', text);
    q.orWhere((or) => whereContains(or, 'slug', text));
  });
  return query.orderBy('slug').limit(limit).select('slug', 'name', 'state');
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
    listSessions: (organizationId: string, options: Parameters<typeof listSessions>[2]) => listSessions(db, organizationId, options),
    findReceipt: (organizationId: string, id: string) => findReceipt(db, organizationId, id),
    pageNamedBy: (organizationId: string, text: string) => pageNamedBy(db, organizationId, text),
    scribesMatching: (organizationId: string, text: string, limit: number) => scribesMatching(db, organizationId, text, limit),
    bulkSelection: (organizationId: string, ...rest: Parameters<typeof bulkSelection> extends [Db, string, ...infer R] ? R : never) => bulkSelection(db, organizationId, ...rest),
  };
}
