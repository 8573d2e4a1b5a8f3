import type { Db } from '../db/knex.js';
import { type Clock, isoNow } from '../lib/clock.js';
import { UUID_PATTERN, newId } from '../lib/ids.js';
import { HttpError, NotFoundError, ValidationError } from '../http/errors.js';
import type { EntryTypeService, EntryTypeWithFields } from './entry-type-service.js';
import { type FieldValue, fieldMap, fold, messages as valueMessages, normalizeValues, searchRows } from './field-values.js';
import * as queries from './queries.js';
import type { EntryRow, ServedEntryRow } from './queries.js';
import { type JsonPage, type ListOptions, createPageReader } from './page-reader.js';
import type { ReadWorkers } from './read-workers.js';

export const messages = {
  entryNotFound: 'Entry not found',
  linkNotFound: (field: string, id: string) => `Field "${field}" links to ${id}, which is not an entry of its target type`,
  noEntryNamed: (type: string, text: string) => `No ${type} entry is called "${text}"`,
  severalEntriesNamed: (type: string, text: string) => `Several ${type} entries are called "${text}": pick one from the list, or give its id`,
};

/** An entry as the API serves it (the entries family). */
export interface ApiEntry {
  id: string;
  entry_type_id: string;
  fields: Record<string, FieldValue>;
  draft: boolean;
  archived: boolean;
  created_at: string;
  updated_at: string;
}

export function presentEntry(row: ServedEntryRow): ApiEntry {
  return {
    id: row.id,
    entry_type_id: row.entry_type_id,
    fields: fieldMap(Object.entries(JSON.parse(row.fields) as Record<string, FieldValue>)),
    draft: Boolean(row.draft),
    archived: row.archived_at !== null,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** An entry's JSON text (as pages are read) as an object, its fields in a `fieldMap`. */
function parseEntry(json: string): ApiEntry {
  const entry = JSON.parse(json) as ApiEntry;
  return { ...entry, fields: fieldMap(Object.entries(entry.fields)) };
}

/** A type's entries that the console's search box found (see `findByPrimary`). */
export interface PrimaryMatches {
  type: EntryTypeWithFields;
  entries: ApiEntry[];
  more: boolean;
  timedOut: boolean;
}

export interface EntryInput {
  fields?: unknown;
  draft?: boolean;
  archived?: boolean;
}

export type EntryService = ReturnType<typeof createEntryService>;

export function createEntryService({
  db,
  clock,
  entryTypes,
  readWorkers,
  searchDriveLimit,
  readTimeoutMs,
}: {
  db: Db;
  clock: Clock;
  entryTypes: EntryTypeService;
  /** Where pages are read when given; otherwise in this thread. */
  readWorkers?: ReadWorkers;
  /** See driveLimitFor in search/compile.ts; tests force each plan with it. */
  searchDriveLimit?: number;
  /** How long a page read in this thread may take (tests shorten it; read workers have their own). */
  readTimeoutMs?: number;
}) {
  const pages = readWorkers ?? createPageReader({ db, searchDriveLimit, timeoutMs: readTimeoutMs });

  /** Validates values against the type, including that links point at entries of the target type in the same organization. */
  async function resolveValues(type: EntryTypeWithFields, current: Record<string, FieldValue>, input: unknown) {
    const changes = normalizeValues(type.fields, input);
    const merged = new Map(Object.entries(current));
    for (const [field, value] of changes) {
      if (value === null) merged.delete(field.name);
      else merged.set(field.name, value);
    }
    const primary = type.fields.find((f) => f.is_primary)!;
    const primaryValue = merged.get(primary.name);
    if (typeof primaryValue !== 'string' || primaryValue.trim() === '') throw new ValidationError(valueMessages.primaryRequired(primary.name));

    for (const field of type.fields.filter((f) => f.type === 'relationship')) {
      const ids = (merged.get(field.name) as string[] | undefined) ?? [];
      const found = await queries.findEntryTypesOfEntries(
        db,
        type.organization_id,
        ids.filter((id) => UUID_PATTERN.test(id)),
      );
      const ofTarget = new Set(found.filter((e) => e.entry_type_id === field.target_entry_type_id).map((e) => e.id));
      const missing = ids.find((id) => !ofTarget.has(id));
      if (missing) throw new ValidationError(messages.linkNotFound(field.name, missing));
    }
    // Canonical order: the entry type's field order.
    return fieldMap(type.fields.filter((f) => merged.has(f.name)).map((f) => [f.name, merged.get(f.name)!]));
  }

  async function save(
    type: EntryTypeWithFields,
    id: string,
    values: Record<string, FieldValue>,
    flags: { draft: boolean; archivedAt: string | null; createdAt: string; now: string },
    isNew: boolean,
  ) {
    const key = { entry_id: id, entry_created_at: flags.createdAt, entry_draft: flags.draft, entry_archived: flags.archivedAt !== null };
    const { valueRows, links, searchText, primaryText } = searchRows(key, type.fields, values);
    const row: EntryRow = {
      id,
      organization_id: type.organization_id,
      entry_type_id: type.id,
      fields: JSON.stringify(values),
      draft: flags.draft,
      archived_at: flags.archivedAt,
      search_text: searchText,
      primary_text: primaryText,
      created_at: flags.createdAt,
      updated_at: flags.now,
    };
    await queries.saveEntry(db, row, valueRows, links, isNew);
    return presentEntry(row);
  }

  return {
    /** Creates an entry of a type of the organization (for staff, agents and the CLI; there is no public write). */
    async create(organizationId: string, entryTypeId: string, input: EntryInput): Promise<ApiEntry> {
      const type = await entryTypes.get(organizationId, entryTypeId);
      const values = await resolveValues(type, {}, input.fields ?? {});
      const now = isoNow(clock);
      return save(type, newId(), values, { draft: input.draft ?? false, archivedAt: input.archived ? now : null, createdAt: now, now }, true);
    },

    /** Changes some fields (null clears one) and flags of an entry. */
    async update(organizationId: string, id: string, input: EntryInput): Promise<ApiEntry> {
      const existing = UUID_PATTERN.test(id) ? await queries.findEntry(db, organizationId, id) : undefined;
      if (!existing) throw new NotFoundError(messages.entryNotFound);
      const type = await entryTypes.get(organizationId, existing.entry_type_id);
      const current = fieldMap(Object.entries(JSON.parse(existing.fields) as Record<string, FieldValue>));
      const values = input.fields === undefined ? current : await resolveValues(type, current, input.fields);
      const now = isoNow(clock);
      const archivedAt = input.archived === undefined ? existing.archived_at : input.archived ? (existing.archived_at ?? now) : null;
      return save(type, id, values, { draft: input.draft ?? Boolean(existing.draft), archivedAt, createdAt: existing.created_at, now }, false);
    },

    /** The primary values of these entries of the organization (unknown ids are left out). */
    async titles(organizationId: string, ids: readonly string[]) {
      const valid = ids.filter((id) => UUID_PATTERN.test(id));
      return valid.length ? queries.findEntryTitles(db, organizationId, { ids: valid }) : [];
    },

    /** Up to `limit` entries of a type whose primary value holds `text` (any case), those starting with it first: what a picker offers. */
    async titlesMatching(organizationId: string, entryTypeId: string, text: string, limit: number) {
      return queries.findEntryTitles(db, organizationId, { entryTypeId, contains: fold(text).trim() }, limit);
    },

    /**
     * The entry of a type that `text` names: its id, or its exact primary value (any case).
     * 422 when none does, or when several share the name (the id then tells them apart).
     */
    async resolveLink(organizationId: string, type: { id: string; name: string }, text: string): Promise<string> {
      const given = text.trim();
      const asId = given.toLowerCase();
      const byId = UUID_PATTERN.test(asId) ? await queries.findEntryTypesOfEntries(db, organizationId, [asId]) : [];
      if (byId[0]?.entry_type_id === type.id) return byId[0].id;
      const named = await queries.findEntryTitles(db, organizationId, { entryTypeId: type.id, named: fold(given).trim() }, 2);
      if (named.length === 1) return named[0]!.id;
      throw new ValidationError(named.length === 0 ? messages.noEntryNamed(type.name, given) : messages.severalEntriesNamed(type.name, given));
    },

    /** The entries linking to an entry through their relationship fields: the first `limit`, and how many there are. */
    async linkedFrom(organizationId: string, id: string, limit: number) {
      return queries.findBacklinks(db, organizationId, id, limit);
    },

    async countByType(organizationId: string) {
      return queries.countEntriesByType(db, organizationId);
    },

    /** One entry of the organization, drafts and archived ones included; 404 `Entry not found` otherwise. */
    async get(organizationId: string, id: string): Promise<ApiEntry> {
      const row = UUID_PATTERN.test(id) ? await queries.findEntry(db, organizationId, id) : undefined;
      if (!row) throw new NotFoundError(messages.entryNotFound);
      return presentEntry(row);
    },

    /** A page of a type's entries as `listJson` finds them, as objects (agents, the console). */
    async list(type: EntryTypeWithFields, options: ListOptions): Promise<{ entries: ApiEntry[]; nextCursor: string | null }> {
      const page = await this.listJson(type, options);
      return { entries: page.entries.map((json) => parseEntry(json)), nextCursor: page.nextCursor };
    },

    /**
     * The entries of each of the organization's types whose primary value contains `text`, in
     * any case, drafts and archived ones included: the first `limit` of each type in page order,
     * whether more follow, and whether the type's read stopped at its deadline instead
     * (`timedOut`). Each type is read as its list reads a search (in the read threads, under
     * its own deadline), all at once. Types with no match are left out.
     */
    async findByPrimary(organizationId: string, text: string, limit: number): Promise<PrimaryMatches[]> {
      const types = await entryTypes.list(organizationId);
      const found = await Promise.all(
        types.map(async (type): Promise<PrimaryMatches> => {
          try {
            const page = await this.list(type, { primaryContains: text, limit, includeDrafts: true, includeArchived: true });
            return { type, entries: page.entries, more: page.nextCursor !== null, timedOut: false };
          } catch (err) {
            if (!(err instanceof HttpError) || err.status !== 503) throw err;
            return { type, entries: [], more: false, timedOut: true };
          }
        }),
      );
      return found.filter((matches) => matches.entries.length > 0 || matches.timedOut);
    },

    /**
     * A page of a type's entries, with the search `q` applied, as the API's JSON texts (see
     * page-reader.ts): 503 `Search timed out` past 5 s. `signal` stops a read in a worker
     * thread when its caller goes away.
     */
    async listJson(type: EntryTypeWithFields, options: ListOptions, signal?: AbortSignal): Promise<JsonPage> {
      return readWorkers ? readWorkers.listJson(type, options, signal) : pages.listJson(type, options);
    },
  };
}
