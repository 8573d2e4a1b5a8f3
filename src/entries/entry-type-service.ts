import type { Db } from '../db/knex.js';
import { dialectOf } from '../db/dialect.js';
import { type Clock, isoNow, laterThan } from '../lib/clock.js';
import { UUID_PATTERN, newId } from '../lib/ids.js';
import { NotFoundError, ValidationError } from '../http/errors.js';
import { checkedName, messages as nameMessages } from '../http/names.js';
import * as queries from './queries.js';
import { FIELD_TYPES, type EntryTypeRow, type FieldRow, type FieldType } from './queries.js';

export const messages = {
  entryTypeNotFound: 'Entry type not found',
  ...nameMessages,
  fieldNameTooLong: 'A field name must be at most 100 characters',
  nameTaken: 'An entry type with this name already exists',
  fieldsRequired: 'fields must be a non-empty list',
  fieldNotObject: 'Each field must be an object',
  fieldNameRequired: 'Each field needs a name',
  fieldNameInvalid: (name: string) => `Field name "${name}" may not contain : < > ( ) & | or "`,
  fieldNameReserved: (name: string) => `Field name "${name}" is reserved for search`,
  fieldNameReservedWord: (name: string) => `Field name "${name}" is reserved`,
  fieldNameTaken: (name: string) => `Field name "${name}" is used twice (names are compared case-insensitively)`,
  fieldTypeInvalid: (name: string) => `Field "${name}" has no valid type (one of ${FIELD_TYPES.join(', ')})`,
  onePrimary: 'Exactly one field must be primary',
  primaryNotText: 'The primary field must be a text field',
  targetRequired: (name: string) => `Relationship field "${name}" needs a target entry type`,
  targetNotAllowed: (name: string) => `Field "${name}" is not a relationship and cannot have a target`,
  targetNotFound: (name: string) => `The target entry type of "${name}" does not exist`,
};

/** Words a field may not be called: search gives them their own meaning. */
const RESERVED = new Set(['created_at', 'updated_at', 'relationship']);
/**
 * Names JavaScript gives objects already: code that keeps values by field name on a plain
 * object would read Object's `constructor`, or set the prototype through `__proto__`.
 */
const RESERVED_WORDS = new Set(['__proto__', 'constructor', 'prototype']);
/** Characters the search language uses as operators. */
const OPERATOR_CHARS = /[:<>()&|"]/;

export interface FieldInput {
  name: string;
  type: FieldType;
  primary?: boolean;
  target?: string;
}

/** An entry type with its fields in order. */
export interface EntryTypeWithFields extends EntryTypeRow {
  fields: FieldRow[];
}

export type EntryTypeService = ReturnType<typeof createEntryTypeService>;

/** Entry types whose fields are cached, at most; past it the cache starts over. */
const FIELDS_CACHE_SIZE = 1000;

export function createEntryTypeService({ db, clock }: { db: Db; clock: Clock }) {
  // Fields by type id, valid while the type's updated_at is the one they were read at: every
  // change to a type's fields moves it (see update). Saves a query on every entries call.
  const fieldsCache = new Map<string, { updatedAt: string; fields: FieldRow[] }>();

  async function fieldsOf(type: EntryTypeRow): Promise<FieldRow[]> {
    const cached = fieldsCache.get(type.id);
    if (cached?.updatedAt === type.updated_at) return cached.fields;
    const fields = await queries.findFields(db, type.id);
    if (fieldsCache.size >= FIELDS_CACHE_SIZE) fieldsCache.clear();
    fieldsCache.set(type.id, { updatedAt: type.updated_at, fields });
    return fields;
  }

  /** Relationship targets must be entry types of the same organization. */
  async function checkTargets(organizationId: string, fields: readonly FieldInput[]): Promise<void> {
    const targets = [...new Set(fields.flatMap((f) => (f.target ? [f.target] : [])))];
    const found = new Set(
      (
        await queries.findEntryTypesByIds(
          db,
          organizationId,
          targets.filter((t) => UUID_PATTERN.test(t)),
        )
      ).map((t) => t.id),
    );
    for (const field of fields) {
      if (field.target && !found.has(field.target)) throw new ValidationError(messages.targetNotFound(field.name));
    }
  }

  return {
    /** The organization's entry type with its fields; 404 `Entry type not found` otherwise. */
    async get(organizationId: string, id: string): Promise<EntryTypeWithFields> {
      const type = UUID_PATTERN.test(id) ? await queries.findEntryType(db, organizationId, id) : undefined;
      if (!type) throw new NotFoundError(messages.entryTypeNotFound);
      return { ...type, fields: await fieldsOf(type) };
    },

    /** The organization's entry types with their fields, by name. */
    async list(organizationId: string): Promise<EntryTypeWithFields[]> {
      return queries.listEntryTypesWithFields(db, organizationId);
    },

    /** An entry type by id alone, whatever its organization: for operators (the admin CLI), never for the API. */
    async find(id: string): Promise<EntryTypeRow> {
      const type = UUID_PATTERN.test(id) ? await queries.findEntryTypeById(db, id) : undefined;
      if (!type) throw new NotFoundError(messages.entryTypeNotFound);
      return type;
    },

    /**
     * Renames a type and adds fields to it (never primary: the type has its one already).
     * Existing fields keep their name and type: entries store values by field name, and
     * changing either would need every entry rewritten.
     */
    async update(organizationId: string, id: string, input: { name?: string; addFields?: unknown[] }): Promise<EntryTypeWithFields> {
      const type = await this.get(organizationId, id);
      const name = checkedName(input.name === undefined ? type.name : input.name);
      const added = input.addFields?.length
        ? validateFields(
            input.addFields,
            type.fields.map((f) => f.name),
          )
        : [];
      if (added.some((f) => f.primary)) throw new ValidationError(messages.onePrimary);
      await checkTargets(organizationId, added);
      const rows = fieldRows(id, added, type.fields.length);
      try {
        // Strictly later, even within one millisecond: cached fields are keyed by it.
        await queries.updateEntryType(db, id, { name, updated_at: laterThan(clock, type.updated_at) }, rows);
      } catch (err) {
        if (dialectOf(db).isUniqueViolation(err)) throw new ValidationError(messages.nameTaken);
        throw err;
      }
      return this.get(organizationId, id);
    },

    /** Creates an entry type: a name and an ordered list of fields with exactly one primary text field. */
    async create(organizationId: string, input: { name: string; fields: unknown; id?: string }): Promise<EntryTypeWithFields> {
      const name = checkedName(typeof input.name === 'string' ? input.name : '');
      const fields = validateNewTypeFields(input.fields);
      await checkTargets(organizationId, fields);

      const now = isoNow(clock);
      // An id may be given by seeds (the demo's types have fixed ids its README relies on).
      const type: EntryTypeRow = { id: input.id ?? newId(), organization_id: organizationId, name, entry_count: 0, created_at: now, updated_at: now };
      const rows = fieldRows(type.id, fields, 0);
      try {
        await queries.insertEntryType(db, type, rows);
      } catch (err) {
        if (dialectOf(db).isUniqueViolation(err)) throw new ValidationError(messages.nameTaken);
        throw err;
      }
      return { ...type, fields: rows };
    },
  };
}

function fieldRows(entryTypeId: string, fields: readonly FieldInput[], firstPosition: number): FieldRow[] {
  return fields.map((field, i) => ({
    id: newId(),
    entry_type_id: entryTypeId,
    position: firstPosition + i,
    name: field.name,
    name_key: field.name.toLowerCase(),
    type: field.type,
    target_entry_type_id: field.target ?? null,
    is_primary: Boolean(field.primary),
  }));
}

function validateFields(input: unknown, existing: readonly string[] = []): FieldInput[] {
  if (!Array.isArray(input) || input.length === 0) throw new ValidationError(messages.fieldsRequired);
  const seen = new Set(existing.map((name) => name.toLowerCase()));
  return input.map((raw: unknown) => validateField(raw, seen));
}

/** One field of a list; `seen` holds the (lower-cased) names before it. */
function validateField(raw: unknown, seen: Set<string>): FieldInput {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ValidationError(messages.fieldNotObject);
  const field = raw as Record<string, unknown>;
  const name = typeof field.name === 'string' ? field.name.trim() : '';
  if (!name) throw new ValidationError(messages.fieldNameRequired);
  if (name.length > 100) throw new ValidationError(messages.fieldNameTooLong);
  if (OPERATOR_CHARS.test(name)) throw new ValidationError(messages.fieldNameInvalid(name));
  if (RESERVED.has(name.toLowerCase())) throw new ValidationError(messages.fieldNameReserved(name));
  if (RESERVED_WORDS.has(name.toLowerCase())) throw new ValidationError(messages.fieldNameReservedWord(name));
  if (seen.has(name.toLowerCase())) throw new ValidationError(messages.fieldNameTaken(name));
  seen.add(name.toLowerCase());
  if (!(FIELD_TYPES as readonly unknown[]).includes(field.type)) throw new ValidationError(messages.fieldTypeInvalid(name));
  const type = field.type as FieldType;
  if (type === 'relationship' && typeof field.target !== 'string') throw new ValidationError(messages.targetRequired(name));
  if (type !== 'relationship' && field.target !== undefined && field.target !== null) throw new ValidationError(messages.targetNotAllowed(name));
  return { name, type, primary: field.primary === true, target: type === 'relationship' ? (field.target as string) : undefined };
}

/** A new type's fields: valid each, and exactly one primary text field. */
function validateNewTypeFields(input: unknown): FieldInput[] {
  const fields = validateFields(input);
  const primaries = fields.filter((f) => f.primary);
  if (primaries.length !== 1) throw new ValidationError(messages.onePrimary);
  if (primaries[0]!.type !== 'text') throw new ValidationError(messages.primaryNotText);
  return fields;
}
