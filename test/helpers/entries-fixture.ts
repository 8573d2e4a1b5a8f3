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
  const company = (fields: Record<string, unknown>, flags: { draft?: boolean; archived?: boolean } = {}) =>
    h.services.entries.create(org, companies.id, { fields, ...flags });
  const contact = (fields: Record<string, unknown>, flags: { draft?: boolean; archived?: boolean } = {}) =>
    h.services.entries.create(org, contacts.id, { fields, ...flags });
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
    suite.h = await createHarness({ options: { dispatchOnAccept: false, ...options } });
    suite.t = await suite.h.tenant();
    suite.fx = await entriesFixture(suite.h, suite.t);
  });
  after(() => suite.h.close());
  return suite;
}
