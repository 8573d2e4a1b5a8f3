import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { entriesFixture } from '../helpers/entries-fixture.js';

/** Awaits a promise that must fail with a 422 of this exact message. */
async function rejects422(promise: Promise<unknown>, message: string) {
  try {
    await promise;
  } catch (err) {
    expect((err as Error).message).to.equal(message);
    expect((err as { status?: number }).status).to.equal(422);
    return;
  }
  expect.fail(`expected a 422 "${message}"`);
}

describe('entry type service', () => {
  let h: Harness;
  let t: Tenant;
  before(async () => {
    h = await createHarness({ options: { dispatchOnAccept: false } });
    t = await h.tenant();
  });
  after(() => h.close());

  const create = (fields: unknown, name = `Type ${Math.random()}`) => h.services.entryTypes.create(t.organizationId, { name, fields });
  const primary = { name: 'Name', type: 'text', primary: true };

  it('creates a type with ordered fields', async () => {
    const type = await create([primary, { name: 'Size', type: 'number' }], 'Things');
    expect(type.fields.map((f) => [f.position, f.name, f.type, Boolean(f.is_primary)])).to.deep.equal([
      [0, 'Name', 'text', true],
      [1, 'Size', 'number', false],
    ]);
    expect((await h.services.entryTypes.get(t.organizationId, type.id)).fields).to.have.length(2);
  });

  const invalid: Array<[string, unknown, string]> = [
    ['no fields', [], 'fields must be a non-empty list'],
    ['fields that are not a list', { Name: 'text' }, 'fields must be a non-empty list'],
    ['a field that is not an object', ['Name'], 'Each field must be an object'],
    ['a field without a name', [{ type: 'text', primary: true }], 'Each field needs a name'],
    ['an operator in a name', [primary, { name: 'a:b', type: 'text' }], 'Field name "a:b" may not contain : < > ( ) & | or "'],
    ['a reserved name', [primary, { name: 'Created_At', type: 'date' }], 'Field name "Created_At" is reserved for search'],
    ['the name __proto__', [primary, { name: '__proto__', type: 'text' }], 'Field name "__proto__" is reserved'],
    ['the name constructor', [primary, { name: 'constructor', type: 'number' }], 'Field name "constructor" is reserved'],
    ['the name prototype', [primary, { name: ' prototype ', type: 'text' }], 'Field name "prototype" is reserved'],
    ['the name Constructor, in any case', [primary, { name: 'Constructor', type: 'text' }], 'Field name "Constructor" is reserved'],
    ['a primary field named __proto__', [{ name: '__proto__', type: 'text', primary: true }], 'Field name "__proto__" is reserved'],
    ['a name used twice', [primary, { name: 'name', type: 'text' }], 'Field name "name" is used twice (names are compared case-insensitively)'],
    ['an unknown type', [primary, { name: 'X', type: 'money' }], 'Field "X" has no valid type (one of text, number, boolean, date, relationship)'],
    ['no primary field', [{ name: 'Name', type: 'text' }], 'Exactly one field must be primary'],
    ['two primary fields', [primary, { name: 'B', type: 'text', primary: true }], 'Exactly one field must be primary'],
    ['a primary that is not text', [{ name: 'N', type: 'number', primary: true }], 'The primary field must be a text field'],
    ['a relationship without target', [primary, { name: 'R', type: 'relationship' }], 'Relationship field "R" needs a target entry type'],
    ['a target on a non-relationship', [primary, { name: 'X', type: 'text', target: 'x' }], 'Field "X" is not a relationship and cannot have a target'],
    ['an unknown target', [primary, { name: 'R', type: 'relationship', target: '01900000-0000-7000-8000-000000000000' }], 'The target entry type of "R" does not exist'],
  ];
  for (const [what, fields, message] of invalid) {
    it(`refuses ${what} with 422 "${message}"`, () => rejects422(create(fields), message));
  }

  it('refuses a blank name, one over 200 characters, a field name over 100, and a name used twice', async () => {
    await rejects422(h.services.entryTypes.create(t.organizationId, { name: ' ', fields: [primary] }), 'Name is required');
    // Refused before the database, whose column is 200 wide (PostgreSQL would fail the INSERT).
    await rejects422(create([primary], 'n'.repeat(201)), 'Name must be at most 200 characters');
    await rejects422(create([primary, { name: 'f'.repeat(101), type: 'text' }]), 'A field name must be at most 100 characters');
    expect(await h.db('entry_types').where({ organization_id: t.organizationId }).whereRaw('length(name) > 200')).to.have.length(0);
    await create([primary, { name: 'f'.repeat(100), type: 'text' }], 'n'.repeat(200));
    await create([primary], 'Twice');
    await rejects422(create([primary], 'Twice'), 'An entry type with this name already exists');
  });

  describe('update', () => {
    it('renames a type and appends fields after the existing ones, bumping updated_at', async () => {
      const type = await create([primary], 'Before');
      const updated = await h.services.entryTypes.update(t.organizationId, type.id, {
        name: 'After',
        addFields: [
          { name: 'Size', type: 'number' },
          { name: 'Parent', type: 'relationship', target: type.id },
        ],
      });
      expect(updated.name).to.equal('After');
      expect(updated.fields.map((f) => [f.position, f.name, f.type, Boolean(f.is_primary)])).to.deep.equal([
        [0, 'Name', 'text', true],
        [1, 'Size', 'number', false],
        [2, 'Parent', 'relationship', false],
      ]);
      expect(updated.updated_at >= type.updated_at).to.equal(true);
    });

    const refusals: Array<[string, { name?: string; addFields?: unknown[] }, string]> = [
      ['a blank name', { name: '  ' }, 'Name is required'],
      ['a name over 200 characters', { name: 'n'.repeat(201) }, 'Name must be at most 200 characters'],
      ['a field named like an existing one', { addFields: [{ name: 'NAME', type: 'text' }] }, 'Field name "NAME" is used twice (names are compared case-insensitively)'],
      ['a second primary field', { addFields: [{ name: 'Other', type: 'text', primary: true }] }, 'Exactly one field must be primary'],
      ['an unknown target', { addFields: [{ name: 'R', type: 'relationship', target: '01900000-0000-7000-8000-000000000000' }] }, 'The target entry type of "R" does not exist'],
      ['an invalid field', { addFields: [{ name: 'a|b', type: 'text' }] }, 'Field name "a|b" may not contain : < > ( ) & | or "'],
      ['a field named __proto__', { addFields: [{ name: '__proto__', type: 'text' }] }, 'Field name "__proto__" is reserved'],
    ];
    for (const [what, change, message] of refusals) {
      it(`refuses ${what}, changing nothing`, async () => {
        const type = await create([primary]);
        const before = await h.services.entryTypes.get(t.organizationId, type.id);
        await rejects422(h.services.entryTypes.update(t.organizationId, type.id, change), message);
        expect(await h.services.entryTypes.get(t.organizationId, type.id)).to.deep.equal(before);
      });
    }

    it("refuses another type's name, and another organization's type", async () => {
      await create([primary], 'Taken');
      const type = await create([primary]);
      await rejects422(h.services.entryTypes.update(t.organizationId, type.id, { name: 'Taken' }), 'An entry type with this name already exists');
      const other = await h.tenant({ slug: 'other-update' });
      try {
        await h.services.entryTypes.update(other.organizationId, type.id, { name: 'Stolen' });
        expect.fail("updated another organization's type");
      } catch (err) {
        expect((err as Error).message).to.equal('Entry type not found');
      }
    });
  });

  it("refuses a relationship to another organization's type", async () => {
    const other = await h.tenant({ slug: 'other' });
    const theirs = await h.services.entryTypes.create(other.organizationId, { name: 'Theirs', fields: [primary] });
    await rejects422(create([primary, { name: 'R', type: 'relationship', target: theirs.id }]), 'The target entry type of "R" does not exist');
  });
});

describe('entry service', () => {
  let h: Harness;
  let t: Tenant;
  let fx: Awaited<ReturnType<typeof entriesFixture>>;
  before(async () => {
    h = await createHarness({ options: { dispatchOnAccept: false } });
    t = await h.tenant();
    fx = await entriesFixture(h, t);
  });
  after(() => h.close());

  const invalid: Array<[string, Record<string, unknown>, string]> = [
    ['an unknown field', { Name: 'X', Revenue: 5 }, 'Unknown field "Revenue"'],
    ['text that is not a string', { Name: 'X', City: 5 }, 'Field "City" must be a string'],
    ['text holding U+0000', { Name: 'X', City: 'Zu\u0000rich' }, 'Field "City" must not contain U+0000'],
    ['a number that is a string', { Name: 'X', Employees: '5' }, 'Field "Employees" must be a number'],
    ['a boolean that is a string', { Name: 'X', Public: 'yes' }, 'Field "Public" must be true or false'],
    ['an impossible date', { Name: 'X', Founded: '2021-02-30' }, 'Field "Founded" must be a date (YYYY-MM-DD)'],
    ['a missing primary field', { City: 'Zurich' }, 'The primary field "Name" is required'],
    ['a blank primary field', { Name: '  ' }, 'The primary field "Name" is required'],
  ];
  for (const [what, fields, message] of invalid) {
    it(`refuses ${what} with 422 "${message}"`, () => rejects422(fx.company(fields), message));
  }

  it('refuses fields that are not an object', () =>
    rejects422(h.services.entries.create(t.organizationId, fx.companies.id, { fields: ['Name'] }), 'fields must be an object keyed by field name'));

  it('refuses links that are not a list of ids, or point outside the target type or organization', async () => {
    await rejects422(fx.contact({ Name: 'A', Company: 'x' }), 'Field "Company" must be a list of entry ids');
    const notACompany = await fx.contact({ Name: 'Other contact' });
    await rejects422(fx.contact({ Name: 'A', Company: [notACompany.id] }), `Field "Company" links to ${notACompany.id}, which is not an entry of its target type`);
    const other = await h.tenant({ slug: 'x' });
    const foreign = await (await entriesFixture(h, other)).company({ Name: 'Foreign' });
    await rejects422(fx.contact({ Name: 'A', Company: [foreign.id] }), `Field "Company" links to ${foreign.id}, which is not an entry of its target type`);
  });

  it('stores nothing for a refused entry', async () => {
    const before = Number((await h.db('entries').count({ n: '*' }).first())!.n);
    await fx.company({ Name: 'X', Employees: 'many' }).catch(() => undefined);
    expect(Number((await h.db('entries').count({ n: '*' }).first())!.n)).to.equal(before);
  });

  it('matches field names case-insensitively and stores them under their own name, in field order', async () => {
    const entry = await fx.company({ employees: 3, NAME: 'Case Co' });
    expect(entry.fields).to.deep.equal({ Name: 'Case Co', Employees: 3 });
  });

  it('updates some fields, clears one with null, and keeps search rows in step', async () => {
    const entry = await fx.company({ Name: 'Change Co', City: 'Bern', Employees: 5 });
    const updated = await h.services.entries.update(t.organizationId, entry.id, { fields: { City: 'Lausanne', Employees: null }, archived: true });
    expect(updated.fields).to.deep.equal({ Name: 'Change Co', City: 'Lausanne' });
    expect(updated.archived).to.equal(true);
    const values = await h.db('entry_values').where({ entry_id: entry.id });
    expect(
      values
        .map((v) => v.text_folded)
        .filter(Boolean)
        .sort(),
    ).to.deep.equal(['change co', 'lausanne']);
    expect(values.some((v) => v.number_value !== null)).to.equal(false);
    const row = await h.db('entries').where({ id: entry.id }).first();
    expect(row.search_text).to.include('lausanne').and.not.include('bern');
  });

  it('keeps the text index in step when a value changes', async () => {
    const entry = await fx.company({ Name: 'Index Co', City: 'Winterthur' });
    const search = async (q: string) =>
      (await h.api.get(`/api/v1/entry_types/${fx.companies.id}/entries?q=${encodeURIComponent(q)}`).set(t.headers)).body.data.map((e: { id: string }) => e.id);
    expect(await search('City:winterthur')).to.deep.equal([entry.id]);
    await h.services.entries.update(t.organizationId, entry.id, { fields: { City: 'Schaffhausen' } });
    expect(await search('City:winterthur')).to.deep.equal([]);
    expect(await search('schaffhausen')).to.deep.equal([entry.id]);
    await h.services.entries.update(t.organizationId, entry.id, { fields: { City: null } });
    expect(await search('schaffhausen')).to.deep.equal([]);
  });

  it('keeps values of fields named __proto__, constructor and prototype (made before they were refused) as plain values', async () => {
    const type = await h.services.entryTypes.create(t.organizationId, { name: 'Legacy', fields: [{ name: 'Name', type: 'text', primary: true }] });
    const legacy = ['__proto__', 'constructor', 'prototype'].map((name, i) => ({
      id: `01900000-0000-7000-8000-00000000000${i}`,
      entry_type_id: type.id,
      position: i + 1,
      name,
      name_key: name,
      type: 'text',
      target_entry_type_id: null,
      is_primary: false,
    }));
    await h.db('entry_type_fields').insert(legacy);
    await h.db('entry_types').where({ id: type.id }).update({ updated_at: '2099-01-01T00:00:00.000Z' });

    // JSON as a client sends it: "__proto__" is then a key like any other.
    const entry = await h.services.entries.create(t.organizationId, type.id, { fields: JSON.parse('{"Name":"Ada","__proto__":"p","constructor":"c"}') });
    expect(Object.entries(entry.fields)).to.deep.equal([
      ['Name', 'Ada'],
      ['__proto__', 'p'],
      ['constructor', 'c'],
    ]);
    expect(JSON.parse((await h.db('entries').where({ id: entry.id }).first()).fields)).to.deep.equal(JSON.parse('{"Name":"Ada","__proto__":"p","constructor":"c"}'));
    expect((await h.db('entry_values').where({ entry_id: entry.id }).pluck('text_folded')).sort()).to.deep.equal(['ada', 'c', 'p']);

    const plain = await h.services.entries.create(t.organizationId, type.id, { fields: { Name: 'Bob' } });
    expect(Object.entries(plain.fields)).to.deep.equal([['Name', 'Bob']]);
    const updated = await h.services.entries.update(t.organizationId, entry.id, { fields: JSON.parse('{"__proto__":null,"prototype":"q"}') });
    expect(Object.entries(updated.fields)).to.deep.equal([
      ['Name', 'Ada'],
      ['constructor', 'c'],
      ['prototype', 'q'],
    ]);
    expect(Object.entries((await h.services.entries.get(t.organizationId, entry.id)).fields)).to.deep.equal([
      ['Name', 'Ada'],
      ['constructor', 'c'],
      ['prototype', 'q'],
    ]);
    expect(({} as Record<string, unknown>).p, 'no object gained a property').to.equal(undefined);
  });

  it('refuses an update to an entry of another organization', async () => {
    const entry = await fx.company({ Name: 'Mine' });
    const other = await h.tenant({ slug: 'y' });
    try {
      await h.services.entries.update(other.organizationId, entry.id, { draft: true });
      expect.fail('should not update');
    } catch (err) {
      expect((err as { status?: number }).status).to.equal(404);
      expect((err as Error).message).to.equal('Entry not found');
    }
  });
});
