import { Router, type Request } from 'express';
import type { Services } from '../../services.js';
import type { EntryTypeWithFields } from '../../entries/entry-type-service.js';
import type { FieldRow } from '../../entries/queries.js';
import { FIELD_TYPES } from '../../entries/queries.js';
import { fieldMap } from '../../entries/field-values.js';
import { trailPagerOf } from '../pager.js';
import { BadRequestError, HttpError } from '../../http/errors.js';
import { messages as searchMessages } from '../../entries/search/compile.js';
import { requireAdmin, userActor } from '../auth.js';
import { action, flash } from '../forms.js';
import { entryFormat } from '../entry-format.js';
import { render } from '../views.js';

const PAGE = 50;
/** Matches a relationship picker offers for what was typed. */
const PICKER_MATCHES = 20;
/** Entries an entry's "Linked from" lists; the count says how many more there are. */
const BACKLINKS = 50;
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
    render(res, 'entry-types/index', { title: 'Entries', types, counts: await services.entries.countByType(org), fieldTypes: FIELD_TYPES, rows: FIELD_ROWS });
  });

  router.post(
    '/entry-types',
    requireAdmin,
    action(
      async (req) => {
        const type = await services.entryTypes.create(req.user!.organization_id, { name: String(req.body.name ?? ''), fields: fieldsFromForm(req) });
        await services.audit.record(userActor(req), 'entry_type.create', { type: 'entry_type', id: type.id }, type.name);
        flash(req, 'notice', `Entry type ${type.name} created.`);
        return typePage(type.id);
      },
      () => '/entry-types',
      { form: 'entry-type' },
    ),
  );

  router.get('/entry-types/:id', async (req, res) => {
    const org = req.user!.organization_id;
    const type = await services.entryTypes.get(org, String(req.params.id));
    const q = typeof req.query.q === 'string' ? req.query.q : '';
    const filters = { q, drafts: req.query.drafts === '1', archived: req.query.archived === '1' };
    let page: Awaited<ReturnType<typeof services.entries.list>> = { entries: [], nextCursor: null };
    let searchError: string | null = null;
    try {
      // Given twice, neither is the search: refused as the API refuses it, rather than listing every entry.
      if (req.query.q !== undefined && typeof req.query.q !== 'string') throw new BadRequestError(searchMessages.invalidQuery('q is given more than once'));
      page = await services.entries.list(type, { q, after: req.query.after, limit: PAGE, includeDrafts: filters.drafts, includeArchived: filters.archived });
    } catch (err) {
      // A query that does not parse (or a stale cursor) is said on the page, beside the search box.
      if (!(err instanceof HttpError) || err.status !== 400) throw err;
      searchError = err.message;
    }
    const names = await linkedNames(services, org, type, page.entries);
    const pager = trailPagerOf({
      path: `/entry-types/${type.id}`,
      filters: { q: filters.q, drafts: filters.drafts ? 1 : '', archived: filters.archived ? 1 : '' },
      after: req.query.after,
      trail: req.query.trail,
      next: page.nextCursor,
      order: 'Oldest first',
    });
    render(res, 'entry-types/show', { title: type.name, type, entries: page.entries, pager, filters, searchError, primary: primaryOf(type), names, fmt: entryFormat });
  });

  // The relationship picker's matches (public/picker.js): a type's entries whose name holds `q`.
  router.get('/entry-types/:id/options', async (req, res) => {
    const type = await services.entryTypes.get(req.user!.organization_id, String(req.params.id));
    const q = typeof req.query.q === 'string' ? req.query.q.slice(0, 200) : '';
    res.json({ entries: await services.entries.titlesMatching(type.organization_id, type.id, q, PICKER_MATCHES) });
  });

  router.get('/entry-types/:id/edit', requireAdmin, async (req, res) => {
    const org = req.user!.organization_id;
    const type = await services.entryTypes.get(org, String(req.params.id));
    render(res, 'entry-types/edit', { title: `Edit ${type.name}`, type, types: await services.entryTypes.list(org), fieldTypes: FIELD_TYPES, rows: FIELD_ROWS });
  });

  router.post(
    '/entry-types/:id',
    requireAdmin,
    action(
      async (req) => {
        const type = await services.entryTypes.update(req.user!.organization_id, String(req.params.id), { name: String(req.body.name ?? ''), addFields: fieldsFromForm(req) });
        await services.audit.record(userActor(req), 'entry_type.update', { type: 'entry_type', id: type.id }, type.name);
        flash(req, 'notice', `Entry type ${type.name} saved.`);
        return typePage(type.id);
      },
      (req) => `${typePage(String(req.params.id))}/edit`,
      { form: 'entry-type' },
    ),
  );

  router.get('/entry-types/:id/new', requireAdmin, async (req, res) => {
    const type = await services.entryTypes.get(req.user!.organization_id, String(req.params.id));
    render(res, 'entries/form', { title: `New ${type.name} entry`, type, entry: null, names: new Map() });
  });

  router.post(
    '/entry-types/:id/entries',
    requireAdmin,
    action(
      async (req) => {
        const type = await services.entryTypes.get(req.user!.organization_id, String(req.params.id));
        const entry = await services.entries.create(type.organization_id, type.id, await inputFromForm(services, req, type, 'create'));
        await services.audit.record(userActor(req), 'entry.create', { type: 'entry', id: entry.id }, type.name);
        flash(req, 'notice', 'Entry created.');
        return entryPage(entry.id);
      },
      (req) => `${typePage(String(req.params.id))}/new`,
      { form: 'entry' },
    ),
  );

  router.get('/entries/:id', async (req, res) => {
    const org = req.user!.organization_id;
    const { entry, type } = await entryWithType(services, org, String(req.params.id));
    const [titles, linkedFrom] = await Promise.all([linkedNames(services, org, type, [entry]), services.entries.linkedFrom(org, entry.id, BACKLINKS)]);
    render(res, 'entries/show', { title: String(entry.fields[primaryOf(type)] ?? 'Entry'), entry, type, titles, linkedFrom });
  });

  router.get('/entries/:id/edit', requireAdmin, async (req, res) => {
    const org = req.user!.organization_id;
    const { entry, type } = await entryWithType(services, org, String(req.params.id));
    render(res, 'entries/form', { title: 'Edit entry', type, entry, names: await linkedNames(services, org, type, [entry]) });
  });

  router.post(
    '/entries/:id',
    requireAdmin,
    action(
      async (req) => {
        const org = req.user!.organization_id;
        const { entry: current, type } = await entryWithType(services, org, String(req.params.id));
        const entry = await services.entries.update(org, current.id, await inputFromForm(services, req, type, 'update'));
        await services.audit.record(userActor(req), 'entry.update', { type: 'entry', id: entry.id }, type.name);
        flash(req, 'notice', 'Entry saved.');
        return entryPage(entry.id);
      },
      (req) => `${entryPage(String(req.params.id))}/edit`,
      { form: 'entry' },
    ),
  );

  return router;
}

/** An entry of the organization with its type (404 for either as the services answer). */
async function entryWithType(services: Services, organizationId: string, id: string) {
  const entry = await services.entries.get(organizationId, id);
  return { entry, type: await services.entryTypes.get(organizationId, entry.entry_type_id) };
}

/** The name of the type's primary field. */
export function primaryOf(type: EntryTypeWithFields): string {
  return type.fields.find((f) => f.is_primary)!.name;
}

/** The names of the entries these entries link to, by id, read in one query. */
async function linkedNames(
  services: Services,
  organizationId: string,
  type: EntryTypeWithFields,
  entries: ReadonlyArray<{ fields: Record<string, unknown> }>,
): Promise<Map<string, string>> {
  const links = type.fields.filter((f) => f.type === 'relationship');
  const ids = new Set(entries.flatMap((e) => links.flatMap((f) => (e.fields[f.name] as string[] | undefined) ?? [])));
  return new Map((await services.entries.titles(organizationId, [...ids])).map((t) => [t.id, t.title]));
}

/** The entry form as the entry service's input: its field values and its two flag checkboxes. */
async function inputFromForm(services: Services, req: Request, type: EntryTypeWithFields, mode: 'create' | 'update') {
  return { fields: await valuesFromForm(services, req, type, mode), draft: req.body.draft === '1', archived: req.body.archived === '1' };
}

/**
 * The entry form's inputs (`f_<position>`) as field values; blank clears a field on update, is
 * left out on create. A relationship field's kept links come as `f_<position>` ids; what was
 * typed in its picker (`f_<position>_add`: an id or an exact name, when no script picked it)
 * is resolved to one more.
 */
async function valuesFromForm(services: Services, req: Request, type: EntryTypeWithFields, mode: 'create' | 'update'): Promise<Record<string, unknown>> {
  const values = fieldMap<unknown>();
  for (const field of type.fields) {
    const raw = req.body[`f_${field.position}`] as string | string[] | undefined;
    let value = parseField(field, raw);
    const typed = field.type === 'relationship' ? String(req.body[`f_${field.position}_add`] ?? '').trim() : '';
    if (typed) {
      const target = await services.entryTypes.get(type.organization_id, field.target_entry_type_id!);
      const id = await services.entries.resolveLink(type.organization_id, target, typed);
      value = [...((value as string[] | undefined) ?? []), id];
    }
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
