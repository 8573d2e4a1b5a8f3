import type { Db } from '../db/knex.js';
import type { AuditEventRow } from './service.js';
import { findEntryTitles } from '../entries/queries.js';
import { UUID_PATTERN } from '../lib/ids.js';
import { readKeysetPage, type KeysetPage, type PageAt } from '../db/keyset.js';

/** What an auditor narrows the log to; every part optional. Times are ISO 8601 UTC. */
export interface AuditFilter {
  actorType?: string;
  /** Part of the actor's label (an email, a key's name), any case. */
  actor?: string;
  /** An action, or its family when it ends in "." (`schedule.`). */
  action?: string;
  subjectType?: string;
  subjectId?: string;
  /** From this time, inclusive. */
  since?: string;
  /** Until this time, exclusive. */
  until?: string;
}

export async function insertAuditEvent(db: Db, row: Omit<AuditEventRow, 'id'>): Promise<void> {
  await db('audit_events').insert(row);
}

/** LIKE patterns match these literally only when escaped. */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * The organization's events matching `filter`, unordered. A subject's history reads the
 * audit_events_subject index, everything else the (organization_id, id) one.
 */
function matchingEvents(db: Db, organizationId: string, filter: AuditFilter) {
  const query = db<AuditEventRow>('audit_events').where({ organization_id: organizationId });
  if (filter.actorType) query.where('actor_type', filter.actorType);
  if (filter.actor) query.whereRaw("lower(actor_label) like ? escape '\\'", [`%${likeLiteral(filter.actor.toLowerCase())}%`]);
  if (filter.action?.endsWith('.')) query.whereRaw("action like ? escape '\\'", [`${likeLiteral(filter.action)}%`]);
  else if (filter.action) query.where('action', filter.action);
  if (filter.subjectType) query.where('subject_type', filter.subjectType);
  if (filter.subjectId) query.where('subject_id', filter.subjectId);
  if (filter.since) query.where('created_at', '>=', filter.since);
  if (filter.until) query.where('created_at', '<', filter.until);
  return query;
}

/** The events matching `filter`, newest first, `limit` at a time after the event `before` (keyset paging on the id). */
export async function listAuditEvents(db: Db, organizationId: string, filter: AuditFilter, page: { before?: number; limit: number }): Promise<AuditEventRow[]> {
  const query = matchingEvents(db, organizationId, filter);
  if (page.before !== undefined) query.where('id', '<', page.before);
  return query.orderBy('id', 'desc').limit(page.limit);
}

/** A page of the events matching `filter` for the console's two-way pager, with their capped total. */
export function pageAuditEvents(db: Db, organizationId: string, filter: AuditFilter, at: PageAt, limit: number): Promise<KeysetPage<AuditEventRow>> {
  return readKeysetPage(db, matchingEvents(db, organizationId, filter), { columns: ['id'], keyOf: (row: AuditEventRow) => [row.id] }, at, limit);
}

/** The actions recorded in the organization, for the filter's choices. */
export async function listAuditActions(db: Db, organizationId: string): Promise<string[]> {
  return db('audit_events').where({ organization_id: organizationId }).distinct('action').orderBy('action').pluck('action');
}

/** What an event's subject is called now, and what its page is found by (a scribe's slug; the id otherwise). */
export interface SubjectName {
  name: string;
  key: string;
}

/**
 * One query per subject type: the rows of the organization with these ids, as `id`, `name`
 * and `key`. Subjects of other types (and ids no longer found) are left out.
 */
const SUBJECT_QUERIES: Record<string, (db: Db, organizationId: string, ids: readonly string[]) => Promise<Array<{ id: string; name: string | null; key?: string }>>> = {
  request: (db, org, ids) => db('requests').where({ organization_id: org }).whereIn('id', ids).select('id', 'title as name'),
  task: (db, org, ids) => db('tasks').where({ organization_id: org }).whereIn('id', ids).select('id', 'title as name'),
  session: (db, org, ids) =>
    db('sessions as x').join('scribes as s', 's.id', 'x.scribe_id').where('x.organization_id', org).whereIn('x.id', ids).select('x.id', db.raw("'chat with ' || s.slug as name")),
  scribe: (db, org, ids) => db('scribes').where({ organization_id: org }).whereIn('id', ids).select('id', 'slug as name', 'slug as key'),
  schedule: (db, org, ids) => db('schedules').where({ organization_id: org }).whereIn('id', ids).select('id', db.raw('coalesce(title, summary) as name')),
  channel: (db, org, ids) => db('channels').where({ organization_id: org }).whereIn('id', ids).select('id', 'name'),
  webhook: (db, org, ids) => db('webhook_endpoints').where({ organization_id: org }).whereIn('id', ids).select('id', db.raw('coalesce(description, url) as name')),
  api_key: (db, org, ids) => db('api_keys').where({ organization_id: org }).whereIn('id', ids).select('id', db.raw("name || ' (' || prefix || ')' as name")),
  user: (db, org, ids) => db('users').where({ organization_id: org }).whereIn('id', ids).select('id', 'email as name'),
  entry_type: (db, org, ids) => db('entry_types').where({ organization_id: org }).whereIn('id', ids).select('id', 'name'),
  entry: async (db, org, ids) => (await findEntryTitles(db, org, { ids })).map((e) => ({ id: e.id, name: e.title })),
};

/** The subject types whose names the log can show. */
export const NAMED_SUBJECT_TYPES = Object.keys(SUBJECT_QUERIES);

/**
 * The current names of these subjects of the organization, by `type:id`, in one query per
 * subject type present. Ids that are not UUIDs (receipts' `req_…`) are asked as they are;
 * PostgreSQL's uuid columns are only asked for UUIDs.
 */
export async function findSubjectNames(db: Db, organizationId: string, subjects: ReadonlyArray<{ type: string; id: string }>): Promise<Map<string, SubjectName>> {
  const byType = new Map<string, Set<string>>();
  for (const { type, id } of subjects) {
    if (!SUBJECT_QUERIES[type] || (type !== 'request' && !UUID_PATTERN.test(id))) continue;
    byType.set(type, (byType.get(type) ?? new Set()).add(id));
  }
  const names = new Map<string, SubjectName>();
  await Promise.all(
    [...byType].map(async ([type, ids]) => {
      for (const row of await SUBJECT_QUERIES[type]!(db, organizationId, [...ids])) names.set(`${type}:${row.id}`, { name: row.name ?? row.id, key: row.key ?? row.id });
    }),
  );
  return names;
}
