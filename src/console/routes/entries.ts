import { Router, type Request } from 'express';
import type { Services } from '../../services.js';
import type { EntryTypeWithFields } from '../../entries/entry-type-service.js';
import type { FieldRow } from '../../entries/queries.js';
import { FIELD_TYPES } from '../../entries/queries.js';
import { HttpError } from '../../http/errors.js';
import { requireAdmin, userActor } from '../auth.js';
import { action, flash } from '../forms.js';

const PAGE = 50;
/** Entries offered in a relationship field's picker; past this, ids are typed. */
const PICKER_LIMIT = 500;
/** Blank rows on the new entry type form. */
const FIELD_ROWS = 8;

/**
 * Entry types and entries: the same `q` search, draft/archived toggles and cursor paging
 * as the API; an entry's page with its relationships as links; create and edit (admin).
 */
export function entryRoutes(services: Services): Router {
  const router = Router();
  const typePage = (id: string) => `/entry-types/${encodeURIComponent(id)}`;
  const entryPage = (id: string) => `/entries/${encodeURIComponent(id)}`;

  router.get('/entry-types', async (req, res) => {
    const org = req.user!.organization_id;
    const types = await services.entryTypes.list(org);
    res.render('entry-types/index', { title: 'Entries', types, counts: await services.entries.countByType(org), fieldTypes: FIELD_TYPES, rows: FIELD_ROWS });
  });

  router.post(
    '/entry-types',
    requireAdmin,
    action(async (req) => {
      const type = await services.entryTypes.create(req.user!.organization_id, { name: String(req.body.name ?? ''), fields: fieldsFromForm(req) });
      await services.audit.record(userActor(req), 'entry_type.create', { type: 'entry_type', id: type.id }, type.name);
      flash(req, 'notice', `Entry type ${type.name} created.`);
      return typePage(type.id);
    }, () => '/entry-types'),
  );

  router.get('/entry-types/:id', async (req, res) => {
    const org = req.user!.organization_id;
    const type = await services.entryTypes.get(org, String(req.params.id));
    const q = typeof req.query.q === 'string' ? req.query.q : '';
    const filters = { q, drafts: req.query.drafts === '1', archived: req.query.archived === '1' };
    let page: Awaited<ReturnType<typeof services.entries.list>> = { entries: [], nextCursor: null };
    let searchError: string | null = null;
    try {
      page = await services.entries.list(type, { q, after: req.query.after, limit: PAGE, includeDrafts: filters.drafts, includeArchived: filters.archived });
    } catch (err) {
      // A query that does not parse (or a stale cursor) is said on the page, beside the search box.
      if (!(err instanceof HttpError) || err.status !== 400) throw err;
      searchError = err.message;
    }
    res.render('entry-types/show', { title: type.name, type, entries: page.entries, next: page.nextCursor, filters, searchError, primary: primaryOf(type) });
  });

  router.get('/entry-types/:id/edit', requireAdmin, async (req, res) => {
    const org = req.user!.organization_id;
    const type = await services.entryTypes.get(org, String(req.params.id));
    res.render('entry-types/edit', { title: `Edit ${type.name}`, type, types: await services.entryTypes.list(org), fieldTypes: FIELD_TYPES, rows: FIELD_ROWS });
  });

  router.post(
    '/entry-types/:id',
    requireAdmin,
    action(async (req) => {
      const type = await services.entryTypes.update(req.user!.organization_id, String(req.params.id), { name: String(req.body.name ?? ''), addFields: fieldsFromForm(req) });
      await services.audit.record(userActor(req), 'entry_type.update', { type: 'entry_type', id: type.id }, type.name);
      flash(req, 'notice', `Entry type ${type.name} saved.`);
      return typePage(type.id);
    }, (req) => `${typePage(String(req.params.id))}/edit`),
  );

  router.get('/entry-types/:id/new', requireAdmin, async (req, res) => {
    const type = await services.entryTypes.get(req.user!.organization_id, String(req.params.id));
    res.render('entries/form', { title: `New ${type.name} entry`, type, entry: null, pickers: await pickersFor(services, req, type) });
  });

  router.post(
    '/entry-types/:id/entries',
    requireAdmin,
    action(async (req) => {
      const type = await services.entryTypes.get(req.user!.organization_id, String(req.params.id));
      const entry = await services.entries.create(type.organization_id, type.id, inputFromForm(req, type, 'create'));
      await services.audit.record(userActor(req), 'entry.create', { type: 'entry', id: entry.id }, type.name);
      flash(req, 'notice', 'Entry created.');
      return entryPage(entry.id);
    }, (req) => `${typePage(String(req.params.id))}/new`),
  );

  router.get('/entries/:id', async (req, res) => {
    const org = req.user!.organization_id;
    const { entry, type } = await entryWithType(services, org, String(req.params.id));
    const linkedIds = type.fields.filter((f) => f.type === 'relationship').flatMap((f) => (entry.fields[f.name] as string[] | undefined) ?? []);
    const titles = new Map((await services.entries.titles(org, linkedIds)).map((t) => [t.id, t.title]));
    res.render('entries/show', { title: String(entry.fields[primaryOf(type)] ?? 'Entry'), entry, type, titles });
  });

  router.get('/entries/:id/edit', requireAdmin, async (req, res) => {
    const { entry, type } = await entryWithType(services, req.user!.organization_id, String(req.params.id));
    res.render('entries/form', { title: 'Edit entry', type, entry, pickers: await pickersFor(services, req, type) });
  });

  router.post(
    '/entries/:id',
    requireAdmin,
    action(async (req) => {
      const org = req.user!.organization_id;
      const { entry: current, type } = await entryWithType(services, org, String(req.params.id));
      const entry = await services.entries.update(org, current.id, inputFromForm(req, type, 'update'));
      await services.audit.record(userActor(req), 'entry.update', { type: 'entry', id: entry.id }, type.name);
      flash(req, 'notice', 'Entry saved.');
      return entryPage(entry.id);
    }, (req) => `${entryPage(String(req.params.id))}/edit`),
  );

  return router;
}

/** An entry of the organization with its type (404 for either as the services answer). */
async function entryWithType(services: Services, organizationId: string, id: string) {
  const entry = await services.entries.get(organizationId, id);
  return { entry, type: await services.entryTypes.get(organizationId, entry.entry_type_id) };
}

function primaryOf(type: EntryTypeWithFields): string {
  return type.fields.find((f) => f.is_primary)!.name;
}

/** For each relationship field, the target type's entries to pick from (by primary value), if few enough. */
async function pickersFor(services: Services, req: Request, type: EntryTypeWithFields) {
  const pickers: Record<string, Array<{ id: string; title: string }> | null> = {};
  for (const field of type.fields.filter((f) => f.type === 'relationship')) {
    const options = await services.entries.titlesOfType(req.user!.organization_id, field.target_entry_type_id!, PICKER_LIMIT + 1);
    pickers[field.name] = options.length > PICKER_LIMIT ? null : options;
  }
  return pickers;
}

/** The entry form as the entry service's input: its field values and its two flag checkboxes. */
function inputFromForm(req: Request, type: EntryTypeWithFields, mode: 'create' | 'update') {
  return { fields: valuesFromForm(req, type, mode), draft: req.body.draft === '1', archived: req.body.archived === '1' };
}

/** The entry form's inputs (`f_<position>`) as field values; blank clears a field on update, is left out on create. */
function valuesFromForm(req: Request, type: EntryTypeWithFields, mode: 'create' | 'update'): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const field of type.fields) {
    const raw = req.body[`f_${field.position}`] as string | string[] | undefined;
    const value = parseField(field, raw);
    if (value !== undefined) values[field.name] = value;
    else if (mode === 'update') values[field.name] = null;
  }
  return values;
}

function parseField(field: FieldRow, raw: string | string[] | undefined): unknown {
  if (field.type === 'relationship') {
    const ids = (Array.isArray(raw) ? raw : String(raw ?? '').split(/[\s,]+/)).map((id) => id.trim()).filter(Boolean);
    return ids.length ? ids : undefined;
  }
  const text = Array.isArray(raw) ? raw[0] : raw;
  if (text === undefined || text.trim() === '') return undefined;
  if (field.type === 'number') return Number.isFinite(Number(text)) ? Number(text) : text;
  if (field.type === 'boolean') return text === 'true' ? true : text === 'false' ? false : text;
  return text;
}

/** The new entry type form's rows (`name_<i>`, `type_<i>`, `target_<i>`, `primary` = i) as the service's field list; blank rows are skipped. */
function fieldsFromForm(req: Request): unknown[] {
  const fields: unknown[] = [];
  for (let i = 0; i < FIELD_ROWS; i++) {
    const name = String(req.body[`name_${i}`] ?? '').trim();
    if (!name) continue;
    const type = String(req.body[`type_${i}`] ?? '');
    fields.push({ name, type, primary: String(req.body.primary) === String(i), target: type === 'relationship' ? String(req.body[`target_${i}`] ?? '') : undefined });
  }
  return fields;
}
