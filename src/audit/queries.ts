import type { Db } from '../db/knex.js';
import type { AuditEventRow } from './service.js';
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
