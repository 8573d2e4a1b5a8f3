import { Router, type Request } from 'express';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { stringify } from 'csv-stringify';
import type { Services } from '../../services.js';
import type { AuditEventRow, AuditFilter } from '../../audit/service.js';
import { NAMED_SUBJECT_TYPES } from '../../audit/queries.js';
import { BadRequestError } from '../../http/errors.js';
import { filtersScope, pageAt, pagerOf, serialCursor } from '../pager.js';
import { render } from '../views.js';
import { namesRealTime } from '../../lib/clock.js';

const PAGE = 50;
const ACTOR_TYPES = ['user', 'api_key', 'operator', 'schedule', 'channel'] as const;
const SUBJECT_TYPES = ['request', 'task', 'session', 'scribe', 'schedule', 'channel', 'webhook', 'api_key', 'entry', 'entry_type', 'user'] as const;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?Z?$/;

/** Where a subject's own page is, found by its key (a scribe's slug, anything else's id); null for subjects without one. */
export function subjectHref(type: string, key: string): string | null {
  const pages: Record<string, string> = {
    request: '/receipts/',
    task: '/tasks/',
    session: '/sessions/',
    scribe: '/b/',
    schedule: '/schedules/',
    channel: '/channels/',
    webhook: '/webhooks/',
    entry: '/entries/',
    entry_type: '/entry-types/',
  };
  if (type === 'api_key') return '/keys';
  return pages[type] ? `${pages[type]}${encodeURIComponent(key)}` : null;
}

/**
 * Each event's subject as the log shows it, by `type:id`: its current name and page, or
 * `deleted` when a subject the log can name is no longer found. Read in one query per type.
 */
async function subjectsOf(services: Services, organizationId: string, events: readonly AuditEventRow[]) {
  const names = await services.audit.subjectNames(organizationId, events);
  const subjects = new Map<string, { name: string; href: string | null } | 'deleted'>();
  for (const e of events) {
    const key = `${e.subject_type}:${e.subject_id}`;
    const found = names.get(key);
    if (found) subjects.set(key, { name: found.name, href: subjectHref(e.subject_type, found.key) });
    else if (NAMED_SUBJECT_TYPES.includes(e.subject_type)) subjects.set(key, 'deleted');
  }
  return subjects;
}

/**
 * A bound of the time range: a date (UTC midnight; `until` a date means through that day) or
 * a date and time in UTC. A day or time that does not exist (2026-02-30, 24:10) is refused,
 * where Date.parse would roll it over into the next month or day.
 */
function timeBound(value: unknown, name: string, endOfDay: boolean): string | undefined {
  const text = typeof value === 'string' ? value.trim() : '';
  if (text === '') return undefined;
  const ok = DATE_ONLY.test(text) || DATE_TIME.test(text);
  const at = ok ? Date.parse(DATE_ONLY.test(text) ? `${text}T00:00:00Z` : text.endsWith('Z') ? text : `${text}Z`) : NaN;
  if (!namesRealTime(text, at)) throw new BadRequestError(`${name} must be a date (2026-11-23) or a date and time in UTC (2026-11-23T14:30)`);
  return new Date(endOfDay && DATE_ONLY.test(text) ? at + 86_400_000 : at).toISOString();
}

/** The filters of `?actor_type=&actor=&action=&subject_type=&subject_id=&from=&to=`, as given (and shown in the form). */
type GivenFilters = Record<'actor_type' | 'actor' | 'action' | 'subject_type' | 'subject_id' | 'from' | 'to', string>;

function givenFilters(req: Request): GivenFilters {
  const text = (name: string) => (typeof req.query[name] === 'string' ? (req.query[name] as string).trim().slice(0, 320) : '');
  const pick = (name: string, allowed: readonly string[]) => (allowed.includes(text(name)) ? text(name) : '');
  return {
    actor_type: pick('actor_type', ACTOR_TYPES),
    actor: text('actor'),
    action: text('action'),
    subject_type: pick('subject_type', SUBJECT_TYPES),
    subject_id: text('subject_id'),
    from: text('from'),
    to: text('to'),
  };
}

/** The filters as the query takes them; a bound that is no time is a 400 (`BadRequestError`). */
function filterOf(given: GivenFilters): AuditFilter {
  return {
    actorType: given.actor_type || undefined,
    actor: given.actor || undefined,
    action: given.action || undefined,
    subjectType: given.subject_type || undefined,
    subjectId: given.subject_id || undefined,
    since: timeBound(given.from, 'From', false),
    until: timeBound(given.to, 'To', true),
  };
}

/**
 * Spreadsheets run a cell that starts with = + - @ (or a tab or return) as a formula; such
 * cells are exported with a leading apostrophe (OWASP's advice for CSV injection).
 */
const inert = (value: string | null) => (value && /^[=+\-@\t\r]/.test(value) ? `'${value}` : (value ?? ''));

/** The audit log: filters an auditor needs, a subject's whole history, and CSV export of any filtered view. */
export function auditRoutes(services: Services): Router {
  const router = Router();

  router.get('/audit', async (req, res) => {
    const org = req.user!.organization_id;
    const given = givenFilters(req);
    const view = { title: 'Audit log', filters: given, filtered: Object.values(given).some(Boolean), actorTypes: ACTOR_TYPES, subjectTypes: SUBJECT_TYPES };
    const paging = { path: '/audit', filters: given, codec: serialCursor, noun: ['event', 'events'] as [string, string], scope: filtersScope(given) };
    let filter: AuditFilter;
    try {
      filter = filterOf(given);
    } catch (err) {
      if (!(err instanceof BadRequestError)) throw err;
      // The form again with the filters as typed and what to mend, and no events: none was looked for.
      const none = { items: [], atStart: true, total: null, newer: null, older: null };
      render(res, 'audit/index', { ...view, events: [], pager: pagerOf(none, paging), actions: await services.audit.actions(org), subjects: new Map(), error: err.message }, 400);
      return;
    }
    const [page, actions] = await Promise.all([services.audit.page(org, filter, pageAt(req, serialCursor), PAGE), services.audit.actions(org)]);
    const subjects = await subjectsOf(services, org, page.items);
    render(res, 'audit/index', { ...view, events: page.items, pager: pagerOf(page, paging), actions, subjects, error: null });
  });

  // The filtered view in full, oldest columns first as the table shows them; streamed a batch at a
  // time, and no further than the client reads: one that goes away ends the export (pipeline).
  router.get('/audit.csv', async (req, res) => {
    const filter = filterOf(givenFilters(req));
    res.attachment(`audit-${new Date().toISOString().slice(0, 10)}.csv`);
    res.type('text/csv; charset=utf-8');
    const events = services.audit.each(req.user!.organization_id, filter);
    async function* rows() {
      for await (const e of events) yield [e.id, e.created_at, e.actor_type, e.actor_id ?? '', inert(e.actor_label), e.action, e.subject_type, e.subject_id, inert(e.detail)];
    }
    const csv = stringify({ header: true, columns: ['id', 'created_at', 'actor_type', 'actor_id', 'actor_label', 'action', 'subject_type', 'subject_id', 'detail'] });
    try {
      await pipeline(Readable.from(rows()), csv, res);
    } catch (err) {
      // The client went away: there is no one left to answer.
      if (res.destroyed && (err as NodeJS.ErrnoException).code === 'ERR_STREAM_PREMATURE_CLOSE') return;
      throw err;
    }
  });

  return router;
}
