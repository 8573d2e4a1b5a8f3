import type { Knex } from 'knex';
import type { Db } from '../db/knex.js';
import { dialectOf } from '../db/dialect.js';
import type { PageWindow, SearchPlan } from './search/compile.js';
import { containsPattern } from './search/text-index.js';

export const FIELD_TYPES = ['text', 'number', 'boolean', 'date', 'relationship'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

export interface EntryTypeRow {
  id: string;
  organization_id: string;
  name: string;
  /** Entries of this type, drafts and archived included; kept by saveEntry. */
  entry_count: number;
  created_at: string;
  updated_at: string;
}

export interface FieldRow {
  id: string;
  entry_type_id: string;
  position: number;
  name: string;
  name_key: string;
  type: FieldType;
  target_entry_type_id: string | null;
  is_primary: boolean | number;
}

export interface EntryRow {
  id: string;
  organization_id: string;
  entry_type_id: string;
  fields: string;
  draft: boolean | number;
  archived_at: string | null;
  search_text: string;
  primary_text: string | null;
  created_at: string;
  updated_at: string;
}

/**
 * What every search row (typed value, link) carries of its entry: the page key and the
 * visibility, so a search filters and sorts its matches on their index alone (migration
 * 20261121001200). Written with the row, from the entry, on every save.
 */
export interface PostingKey {
  entry_id: string;
  entry_created_at: string;
  entry_draft: boolean;
  entry_archived: boolean;
}

export interface ValueRow extends PostingKey {
  field_id: string;
  text_folded: string | null;
  number_value: number | null;
  bool_value: boolean | null;
  date_value: string | null;
}

export interface LinkRow extends PostingKey {
  field_id: string;
  target_entry_id: string;
}

/**
 * An entry as the API serves it (`{id, entry_type_id, fields, draft, archived,
 * created_at, updated_at}`), built by the database as JSON text: the stored `fields` (always
 * written by JSON.stringify) spliced in, ids and timestamps that need no escaping around
 * it. Plain SQL (`||`, CASE), the same on PostgreSQL. One value per row instead of seven:
 * turning column values into JavaScript is most of what reading a page costs
 * (docs/performance.md).
 */
const ENTRY_JSON_SQL = [
  `'{"id":"' || e.id`,
  `'","entry_type_id":"' || e.entry_type_id`,
  `'","fields":' || e.fields`,
  `',"draft":' || (case when e.draft then 'true' else 'false' end)`,
  `',"archived":' || (case when e.archived_at is null then 'false' else 'true' end)`,
  `',"created_at":"' || e.created_at`,
  `'","updated_at":"' || e.updated_at || '"}'`,
].join(' || ');

/** The columns an entry is served from. */
export type ServedEntryRow = Pick<EntryRow, 'id' | 'entry_type_id' | 'fields' | 'draft' | 'archived_at' | 'created_at' | 'updated_at'>;

export async function insertEntryType(db: Db, type: EntryTypeRow, fields: readonly FieldRow[]): Promise<void> {
  await db.transaction(async (trx) => {
    await trx('entry_types').insert(type);
    await trx('entry_type_fields').insert(fields);
  });
}

export async function updateEntryType(db: Db, id: string, change: Pick<EntryTypeRow, 'name' | 'updated_at'>, newFields: readonly FieldRow[]): Promise<void> {
  await db.transaction(async (trx) => {
    await trx('entry_types').where({ id }).update(change);
    if (newFields.length > 0) await trx('entry_type_fields').insert(newFields);
  });
}

export async function findEntryType(db: Db, organizationId: string, id: string): Promise<EntryTypeRow | undefined> {
  return db<EntryTypeRow>('entry_types').where({ id, organization_id: organizationId }).first();
}

export async function findEntryTypeById(db: Db, id: string): Promise<EntryTypeRow | undefined> {
  return db<EntryTypeRow>('entry_types').where({ id }).first();
}

/** The organization's entry types by name, each with its fields in order. */
export async function listEntryTypesWithFields(db: Db, organizationId: string): Promise<Array<EntryTypeRow & { fields: FieldRow[] }>> {
  const types = await db<EntryTypeRow>('entry_types').where({ organization_id: organizationId }).orderBy('name');
  const fields = await db<FieldRow>('entry_type_fields')
    .whereIn(
      'entry_type_id',
      types.map((t) => t.id),
    )
    .orderBy('position');
  return types.map((type) => ({ ...type, fields: fields.filter((f) => f.entry_type_id === type.id) }));
}

export async function findFields(db: Db, entryTypeId: string): Promise<FieldRow[]> {
  return db<FieldRow>('entry_type_fields').where({ entry_type_id: entryTypeId }).orderBy('position');
}

/** The entry types of these ids that belong to the organization. */
export async function findEntryTypesByIds(db: Db, organizationId: string, ids: readonly string[]): Promise<EntryTypeRow[]> {
  return db<EntryTypeRow>('entry_types').where({ organization_id: organizationId }).whereIn('id', ids);
}

/** Which of these entries exist in the organization, and of which type. */
export async function findEntryTypesOfEntries(db: Db, organizationId: string, ids: readonly string[]): Promise<Array<{ id: string; entry_type_id: string }>> {
  if (ids.length === 0) return [];
  return db('entries').where({ organization_id: organizationId }).whereIn('id', ids).select('id', 'entry_type_id');
}

export async function findEntry(db: Db, organizationId: string, id: string): Promise<EntryRow | undefined> {
  return db<EntryRow>('entries').where({ id, organization_id: organizationId }).first();
}

/** Writes an entry with its search rows (typed values and links), replacing any it had. */
export async function saveEntry(db: Db, entry: EntryRow, values: readonly ValueRow[], links: readonly LinkRow[], isNew: boolean): Promise<void> {
  await db.transaction(async (trx) => {
    if (isNew) {
      await trx('entries').insert(entry);
      await trx('entry_types').where({ id: entry.entry_type_id }).increment('entry_count', 1);
    } else {
      await trx('entries').where({ id: entry.id }).update(entry);
      await trx('entry_values').where({ entry_id: entry.id }).delete();
      await trx('entry_links').where({ entry_id: entry.id }).delete();
    }
    if (values.length > 0) await trx('entry_values').insert(values);
    if (links.length > 0) await trx('entry_links').insert(links);
  });
}

export interface EntryListOptions extends PageWindow {
  entryTypeId: string;
  plan: SearchPlan;
  limit: number;
}

/** Page order: oldest first, ties by id. */
export function pageOrder(createdAt: string, id: string) {
  return [
    { column: createdAt, order: 'asc' as const },
    { column: id, order: 'asc' as const },
  ];
}

/**
 * A page of one entry type's entries, oldest first, strictly after `after`, read as the
 * search plan says (search/compile.ts): in page order from entries_type_page, each entry
 * checked with the plan's filter (alias `e`); or the plan's candidates sorted on their page
 * keys and cut to a page first, so that only the page's entries are read. Selects each
 * entry's API JSON as `json`.
 */
export function listEntriesQuery(db: Db, options: EntryListOptions): Knex.QueryBuilder {
  const { plan } = options;
  if (plan.kind === 'postings') {
    return db
      .from(plan.page(options, options.limit).as('p'))
      .join('entries as e', 'e.id', 'p.entry_id')
      .where('e.entry_type_id', options.entryTypeId)
      .select(db.raw(`${ENTRY_JSON_SQL} as json`))
      .orderBy(pageOrder('p.entry_created_at', 'p.entry_id'));
  }
  const query = entriesInWindow(db, options.entryTypeId, options, 'e').select(db.raw(`${ENTRY_JSON_SQL} as json`));
  if (plan.filter) query.where(plan.filter);
  return query.orderBy(pageOrder('e.created_at', 'e.id')).limit(options.limit);
}

/** A type's entries (as `alias`) inside the window: visible under its flags, after its position. */
export function entriesInWindow(db: Db, entryTypeId: string, window: PageWindow, alias: string): Knex.QueryBuilder {
  const query = db({ [alias]: 'entries' }).where(`${alias}.entry_type_id`, entryTypeId);
  if (!window.includeDrafts) query.where(`${alias}.draft`, false);
  if (!window.includeArchived) query.whereNull(`${alias}.archived_at`);
  if (window.after) query.whereRaw('(??, ??) > (?, ?)', [`${alias}.created_at`, `${alias}.id`, window.after.createdAt, window.after.id]);
  return query;
}

/** The page's entries as the API's JSON text, one string each, in page order. */
export async function listEntries(db: Db, options: EntryListOptions, deadline?: number): Promise<string[]> {
  const query = listEntriesQuery(db, options);
  const rows: Array<{ json: string }> = await (deadline === undefined ? query : dialectOf(db).withDeadline(query, deadline));
  return rows.map((row) => row.json);
}

/** What a list of entry titles is narrowed to; `contains` and `named` are folded (see `fold`). */
export interface TitleFilter {
  ids?: readonly string[];
  entryTypeId?: string;
  /** Primary values holding this text; those starting with it come first. */
  contains?: string;
  /** Primary values equal to this text (trimmed), read from entries_org_primary. */
  named?: string;
}

/** Each entry's primary field value, for labels and links (console, agents). */
export async function findEntryTitles(db: Db, organizationId: string, filter: TitleFilter, limit = 1000): Promise<Array<{ id: string; title: string }>> {
  const query = db('entries as e')
    .join('entry_type_fields as f', (on) => on.on('f.entry_type_id', 'e.entry_type_id').andOnVal('f.is_primary', true))
    .where('e.organization_id', organizationId)
    .select('e.id', 'e.fields', 'f.name')
    .limit(limit);
  if (filter.ids) query.whereIn('e.id', filter.ids);
  if (filter.named !== undefined) query.where('e.primary_text', filter.named);
  if (filter.contains !== undefined) {
    query.whereRaw(`e.primary_text like ? escape '\\'`, [containsPattern(filter.contains)]);
    query.orderByRaw(`case when e.primary_text like ? escape '\\' then 0 else 1 end`, [containsPattern(filter.contains).slice(1)]);
  }
  if (filter.entryTypeId) query.where('e.entry_type_id', filter.entryTypeId).orderBy(['e.primary_text', 'e.id']);
  const rows: Array<{ id: string; fields: string; name: string }> = await query;
  return rows.map((row) => ({ id: row.id, title: String((JSON.parse(row.fields) as Record<string, unknown>)[row.name] ?? '') }));
}

/** An entry linking to another through one of its relationship fields, as "Linked from" lists it. */
export interface BacklinkRow {
  id: string;
  title: string;
  entry_type_id: string;
  type_name: string;
  field_name: string;
  draft: boolean | number;
  archived: boolean;
}

/**
 * The first `limit` entries of the organization that link to `targetId`, and how many do.
 * The links are read from entry_links_target (target, field, visibility, page key), in that
 * index's order (by field, then oldest first), each joined to its entry by primary key; the
 * organization is checked on the linking entry itself.
 */
export async function findBacklinks(db: Db, organizationId: string, targetId: string, limit: number): Promise<{ total: number; links: BacklinkRow[] }> {
  const links = () => db('entry_links as l').join('entries as e', 'e.id', 'l.entry_id').where('e.organization_id', organizationId).where('l.target_entry_id', targetId);
  const counted = (await links().first(db.raw('count(*) as n'))) as { n: number | string } | undefined;
  const rows: Array<Omit<BacklinkRow, 'title' | 'archived'> & { fields: string; primary_name: string; archived_at: string | null }> = await links()
    .join('entry_type_fields as f', 'f.id', 'l.field_id')
    .join('entry_types as t', 't.id', 'e.entry_type_id')
    .join('entry_type_fields as p', (on) => on.on('p.entry_type_id', 'e.entry_type_id').andOnVal('p.is_primary', true))
    .orderBy([{ column: 'l.field_id' }, { column: 'l.entry_draft' }, { column: 'l.entry_archived' }, { column: 'l.entry_created_at' }, { column: 'l.entry_id' }])
    .limit(limit)
    .select('e.id', 'e.fields', 'e.entry_type_id', 'e.draft', 'e.archived_at', 't.name as type_name', 'f.name as field_name', 'p.name as primary_name');
  return {
    total: Number(counted?.n ?? 0),
    links: rows.map(({ fields, primary_name, archived_at, ...row }) => ({
      ...row,
      title: String((JSON.parse(fields) as Record<string, unknown>)[primary_name] ?? ''),
      archived: archived_at !== null,
    })),
  };
}

/** How many entries each entry type of the organization has, drafts and archived included. */
export async function countEntriesByType(db: Db, organizationId: string): Promise<Record<string, number>> {
  const rows: Array<{ id: string; entry_count: number }> = await db('entry_types').where({ organization_id: organizationId }).select('id', 'entry_count');
  return Object.fromEntries(rows.map((r) => [r.id, Number(r.entry_count)]));
}
