import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../../src/db/knex.js';
import type { EntryTypeWithFields } from '../../src/entries/entry-type-service.js';
import { type FieldValue, searchRows } from '../../src/entries/field-values.js';
import type { EntryRow, LinkRow, ValueRow } from '../../src/entries/queries.js';
import type { ServiceOptions } from '../../src/services.js';
import { createHarness, type Harness, type Tenant } from './harness.js';

/**
 * Two related entry types of one tenant: Companies (every scalar field type) and Contacts
 * (a relationship to Companies, and a field name with a space).
 */
export async function entriesFixture(h: Harness, t: Tenant) {
  const org = t.organizationId;
  const companies = await h.services.entryTypes.create(org, {
    name: 'Companies',
    fields: [
      { name: 'Name', type: 'text', primary: true },
      { name: 'City', type: 'text' },
      { name: 'Employees', type: 'number' },
      { name: 'Public', type: 'boolean' },
      { name: 'Founded', type: 'date' },
    ],
  });
  const contacts = await h.services.entryTypes.create(org, {
    name: 'Contacts',
    fields: [
      { name: 'Name', type: 'text', primary: true },
      { name: 'Job Title', type: 'text' },
      { name: 'Company', type: 'relationship', target: companies.id },
      { name: 'Score', type: 'number' },
    ],
  });
  const company = (fields: Record<string, unknown>, flags: { draft?: boolean; archived?: boolean } = {}) => h.services.entries.create(org, companies.id, { fields, ...flags });
  const contact = (fields: Record<string, unknown>, flags: { draft?: boolean; archived?: boolean } = {}) => h.services.entries.create(org, contacts.id, { fields, ...flags });
  return { companies, contacts, company, contact };
}

export type EntriesFixture = Awaited<ReturnType<typeof entriesFixture>>;

/**
 * For a describe block: a harness (dispatch off), a tenant and the entries fixture, made
 * before its tests and closed after; read them from the returned object inside tests.
 */
export function entriesSuite(options: ServiceOptions = {}) {
  const suite = {} as { h: Harness; t: Tenant; fx: EntriesFixture };
  before(async () => {
    suite.h = await createHarness({ env: { READ_THREADS: '2' }, options: { dispatchOnAccept: false, ...options } });
    suite.t = await suite.h.tenant();
    suite.fx = await entriesFixture(suite.h, suite.t);
  });
  after(() => suite.h.close());
  return suite;
}

/**
 * Writes entries straight into the tables, with the same search rows the write path makes,
 * in transactions of 2,000 (inserts of 500 rows: SQLite's limit on compound SELECTs): for
 * data sets too large to make one entry at a time (benchmarks, tests of scale).
 */
export async function insertEntriesInBulk(
  db: Db,
  type: EntryTypeWithFields,
  entries: ReadonlyArray<{ fields: Record<string, FieldValue>; createdAt: string; draft?: boolean }>,
): Promise<string[]> {
  const ids: string[] = [];
  for (let offset = 0; offset < entries.length; offset += 2000) {
    const rows: EntryRow[] = [];
    const values: ValueRow[] = [];
    const links: LinkRow[] = [];
    for (const { fields, createdAt, draft = false } of entries.slice(offset, offset + 2000)) {
      const id = uuidv7();
      ids.push(id);
      const search = searchRows({ entry_id: id, entry_created_at: createdAt, entry_draft: draft, entry_archived: false }, type.fields, fields);
      rows.push({
        id,
        organization_id: type.organization_id,
        entry_type_id: type.id,
        fields: JSON.stringify(fields),
        draft,
        archived_at: null,
        search_text: search.searchText,
        primary_text: search.primaryText,
        created_at: createdAt,
        updated_at: createdAt,
      });
      values.push(...search.valueRows);
      links.push(...search.links);
    }
    await db.transaction(async (trx) => {
      await trx.batchInsert('entries', rows, 500);
      await trx.batchInsert('entry_values', values, 500);
      await trx.batchInsert('entry_links', links, 500);
      await trx('entry_types').where({ id: type.id }).increment('entry_count', rows.length);
    });
  }
  return ids;
}
