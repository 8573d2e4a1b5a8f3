import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { signIn, type ConsoleClient } from '../helpers/console.js';
import { statementsDuring } from '../helpers/databases.js';
import type { EntryTypeWithFields } from '../../src/entries/entry-type-service.js';
import { COMPANY_FIELDS } from '../helpers/entries-ui.js';

const LONG_NOTE = `Met at the fair in Basel; ${'they want a yearly contract with monthly reviews and a named contact. '.repeat(2)}`.trim();

describe('console: entries pages', () => {
  let h: Harness;
  let t: Tenant;
  let admin: ConsoleClient;
  let companies: EntryTypeWithFields;
  let people: EntryTypeWithFields;
  const ids = { acme: '', globex: '', initech: '' };
  /** Another organization with a type of the same name and entries of the same names. */
  let other: { org: string; type: EntryTypeWithFields; acme: string };

  const create = async (type: EntryTypeWithFields, fields: Record<string, unknown>, organizationId = t.organizationId) =>
    (await h.services.entries.create(organizationId, type.id, { fields })).id;

  before(async () => {
    h = await createHarness({ env: { READ_THREADS: '2' }, options: { runOnNewWork: false, dispatchOnAccept: false } });
    t = await h.tenant();
    admin = await signIn(h, t, 'admin');
    companies = await h.services.entryTypes.create(t.organizationId, { name: 'Companies', fields: COMPANY_FIELDS });
    people = await h.services.entryTypes.create(t.organizationId, {
      name: 'People',
      fields: [
        { name: 'Name', type: 'text', primary: true },
        { name: 'Employer', type: 'relationship', target: companies.id },
        { name: 'Advises', type: 'relationship', target: companies.id },
      ],
    });
    ids.acme = await create(companies, { Name: 'Acme Corp', Employees: 1250, Public: true, Founded: '1999-03-07', Notes: LONG_NOTE });
    ids.globex = await create(companies, { Name: 'Globex', Employees: 12.5, Public: false });
    ids.initech = await create(companies, { Name: 'Initech' });

    const otherTenant = await h.tenant({ slug: 'other' });
    const otherType = await h.services.entryTypes.create(otherTenant.organizationId, { name: 'Companies', fields: [{ name: 'Name', type: 'text', primary: true }] });
    other = { org: otherTenant.organizationId, type: otherType, acme: await create(otherType, { Name: 'Acme Other' }, otherTenant.organizationId) };
  });
  after(() => h.close());

  /** The table's rows, each as its cells' inner HTML. */
  const rowsOf = (html: string) =>
    [...html.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].slice(1).map((row) => [...row[1]!.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((cell) => cell[1]!.trim()));
  /** The queries the database runs while `run` does. */
  const queriesDuring = async (run: () => Promise<unknown>): Promise<number> => (await statementsDuring(h.db, run)).statements.length;

  describe("an entry type's list", () => {
    it('shows every field as a column in field order, each value formatted by its type', async () => {
      const res = await admin.get(`/entry-types/${companies.id}`);
      expect(res.status).to.equal(200);
      const headers = [...res.text.matchAll(/<th scope="col"[^>]*>([^<]*)<\/th>/g)].map((m) => m[1]);
      expect(headers).to.deep.equal(['Name', 'Employees', 'Public', 'Founded', 'Notes', 'Flags', 'Updated']);
      const [acme, globex, initech] = rowsOf(res.text);
      expect(acme!.slice(0, 5)).to.deep.equal([
        `<a href="/entries/${ids.acme}">Acme Corp</a>`,
        '1,250',
        '<span aria-hidden="true" class="tick">✓</span><span class="visually-hidden">yes</span>',
        '<time datetime="1999-03-07">7 Mar 1999</time>',
        `${LONG_NOTE.slice(0, 79)}…`,
      ]);
      expect(res.text).to.include(`<td title="${LONG_NOTE}">`);
      expect(globex!.slice(0, 5)).to.deep.equal([
        `<a href="/entries/${ids.globex}">Globex</a>`,
        '12.5',
        '<span aria-hidden="true" class="hint">—</span><span class="visually-hidden">no</span>',
        '',
        '',
      ]);
      expect(initech!.slice(0, 5)).to.deep.equal([`<a href="/entries/${ids.initech}">Initech</a>`, '', '', '', '']);
      expect(res.text).to.include('<th scope="col" class="num">Employees</th>');
      expect(res.text).to.include('<div class="table-scroll entries-scroll">');
    });

    it('links each related entry by its name, the rest counted, in the same few queries however many rows', async () => {
      const many = await Promise.all(['Alpha', 'Bravo', 'Charlie', 'Delta'].map((name) => create(companies, { Name: name })));
      const hank = await create(people, { Name: 'Hank', Employer: [ids.acme], Advises: [ids.globex, ids.initech, ...many] });
      const res = await admin.get(`/entry-types/${people.id}`);
      const [row] = rowsOf(res.text);
      expect(row!.slice(0, 3)).to.deep.equal([
        `<a href="/entries/${hank}">Hank</a>`,
        `<a href="/entries/${ids.acme}">Acme Corp</a>`,
        `<a href="/entries/${ids.globex}">Globex</a>, <a href="/entries/${ids.initech}">Initech</a>, <a href="/entries/${many[0]}">Alpha</a> <span class="hint">and 3 more</span>`,
      ]);

      const listQueries = () => queriesDuring(() => admin.agent.get(`/entry-types/${people.id}`).expect(200));
      const withOne = await listQueries();
      for (let i = 0; i < 10; i++) await create(people, { Name: `Person ${i}`, Employer: [many[i % 4]!], Advises: [ids.acme] });
      expect(await listQueries()).to.equal(withOne);
    });
  });

  describe('GET /entry-types/:id/options (the relationship picker)', () => {
    it("answers the type's entries whose name holds the text, any case, those starting with it first", async () => {
      await create(companies, { Name: 'Tacme Supplies' });
      const res = await admin.get(`/entry-types/${companies.id}/options?q=ACME`);
      expect(res.status).to.equal(200);
      expect(res.headers['content-type']).to.match(/^application\/json/);
      expect(res.headers['cache-control']).to.equal('no-store');
      expect(res.body.entries.map((e: { title: string }) => e.title)).to.deep.equal(['Acme Corp', 'Tacme Supplies']);
      expect(res.body.entries[0]).to.deep.equal({ id: ids.acme, title: 'Acme Corp' });
      // LIKE's wildcards mean themselves.
      expect((await admin.get(`/entry-types/${companies.id}/options?q=%25`)).body.entries).to.deep.equal([]);
    });

    it('offers at most 20, among hundreds', async () => {
      const bulk = await h.services.entryTypes.create(t.organizationId, { name: 'Bulk', fields: [{ name: 'Name', type: 'text', primary: true }] });
      for (let i = 0; i < 300; i++) await create(bulk, { Name: `Vendor ${String(i).padStart(3, '0')}` });
      const all = await admin.get(`/entry-types/${bulk.id}/options?q=vendor`);
      expect(all.body.entries).to.have.length(20);
      expect(all.body.entries[0].title).to.equal('Vendor 000');
      const one = await admin.get(`/entry-types/${bulk.id}/options?q=or%20271`);
      expect(one.body.entries.map((e: { title: string }) => e.title)).to.deep.equal(['Vendor 271']);
    });

    it("never answers another organization's entries: their type is not found, and ours holds none of theirs", async () => {
      const theirs = await admin.get(`/entry-types/${other.type.id}/options?q=acme`);
      expect(theirs.status).to.equal(404);
      expect(theirs.text).to.not.include('Acme Other');
      const ours = await admin.get(`/entry-types/${companies.id}/options?q=other`);
      expect(ours.body.entries).to.deep.equal([]);
    });

    it('is for signed-in staff only', async () => {
      const res = await h.api.get(`/entry-types/${companies.id}/options?q=acme`);
      expect(res.status).to.equal(303);
      expect(res.headers.location).to.match(/^\/login/);
      const viewer = await signIn(h, t, 'viewer');
      expect((await viewer.get(`/entry-types/${companies.id}/options?q=acme`)).body.entries[0]).to.deep.equal({ id: ids.acme, title: 'Acme Corp' });
    });
  });

  describe("the entry form's relationship fields", () => {
    const saved = async (id: string) => (await h.services.entries.get(t.organizationId, id)).fields;

    it('shows kept links as checked boxes by name and a search box, and loads the picker script', async () => {
      const hank = await create(people, { Name: 'Hank', Employer: [ids.acme] });
      const form = await admin.get(`/entries/${hank}/edit`);
      expect(form.text).to.include(`<li><label><input type="checkbox" name="f_1" value="${ids.acme}" checked> Acme Corp</label></li>`);
      expect(form.text).to.include(`<div class="picker" data-picker data-options="/entry-types/${companies.id}/options" data-name="f_1">`);
      expect(form.text).to.include('<input id="f_1" name="f_1_add" autocomplete="off"');
      expect(form.text).to.include('<script src="/assets/picker.js" defer></script>');
      expect((await admin.get('/assets/picker.js')).status).to.equal(200);
    });

    it('links what is typed without script: an exact name (any case) or an id, beside the kept links', async () => {
      const byName = await admin.post(`/entry-types/${people.id}/entries`, { f_0: 'Ivy', f_1_add: '  acme CORP ', f_2: [ids.globex], f_2_add: ids.initech.toUpperCase() });
      expect(byName.status).to.equal(303);
      const ivy = String(byName.headers.location).split('/').pop()!;
      expect(await saved(ivy)).to.deep.equal({ Name: 'Ivy', Employer: [ids.acme], Advises: [ids.globex, ids.initech] });
      // Unchecked links are dropped; nothing typed leaves the rest as they are.
      await admin.post(`/entries/${ivy}`, { f_0: 'Ivy', f_1: [ids.acme], f_2: [ids.initech] });
      expect(await saved(ivy)).to.deep.equal({ Name: 'Ivy', Employer: [ids.acme], Advises: [ids.initech] });
    });

    it('says so when nothing or several entries match what was typed, and saves nothing', async () => {
      await create(companies, { Name: 'Twin' });
      await create(companies, { Name: 'twin' });
      const before = (await h.db('entries').where({ entry_type_id: people.id })).length;
      for (const [typed, message] of [
        ['Nobody Inc', 'No Companies entry is called &#34;Nobody Inc&#34;'],
        ['Twin', 'Several Companies entries are called &#34;Twin&#34;: pick one from the list, or give its id'],
        // Another organization's entry, by its id or its name, is not there to link.
        [other.acme, `No Companies entry is called &#34;${other.acme}&#34;`],
        ['Acme Other', 'No Companies entry is called &#34;Acme Other&#34;'],
      ]) {
        const res = await admin.post(`/entry-types/${people.id}/entries`, { f_0: 'Jo', f_1_add: typed! });
        expect(res.headers.location, typed).to.equal(`/entry-types/${people.id}/new`);
        expect((await admin.get(`/entry-types/${people.id}/new`)).text, typed).to.include(`<p class="flash flash-error" role="alert">${message}</p>`);
      }
      expect(await h.db('entries').where({ entry_type_id: people.id })).to.have.length(before);
    });

    it('still refuses a posted id that is not an entry of the target type in this organization', async () => {
      for (const id of [other.acme, people.id]) {
        const res = await admin.post(`/entry-types/${people.id}/entries`, { f_0: 'Kim', f_1: [id] });
        expect(res.headers.location).to.equal(`/entry-types/${people.id}/new`);
        expect((await admin.get(`/entry-types/${people.id}/new`)).text).to.include(`Field &#34;Employer&#34; links to ${id}, which is not an entry of its target type`);
      }
    });
  });

  describe('an entry\'s "Linked from"', () => {
    it('lists the entries linking to it with their type and field, and counts them', async () => {
      const target = await create(companies, { Name: 'Hooli' });
      const lee = await create(people, { Name: 'Lee', Employer: [target] });
      const max = await create(people, { Name: 'Max', Employer: [target], Advises: [target] });
      const res = await admin.get(`/entries/${target}`);
      expect(res.text).to.include('<h2 id="linked-from-heading">Linked from</h2>');
      expect(res.text).to.include('<p class="hint" id="linked-from-count">3 entries link here.</p>');
      const table = res.text.slice(res.text.indexOf('<table class="table" id="linked-from">'));
      const rows = rowsOf(table).map((cells) => cells.join(' | '));
      const [employer, advises] = [people.fields[1]!, people.fields[2]!].sort((a, b) => (a.id < b.id ? -1 : 1));
      const row = (id: string, name: string, field: string) => `<a href="/entries/${id}">${name}</a> | <a href="/entry-types/${people.id}">People</a> | ${field}`;
      const byField = { [employer!.name]: [row(lee, 'Lee', employer!.name), row(max, 'Max', employer!.name)], [advises!.name]: [row(max, 'Max', advises!.name)] };
      expect(rows).to.deep.equal([...byField[employer!.name]!, ...byField[advises!.name]!]);
      expect((await admin.get(`/entries/${ids.initech}`)).text).to.not.include('No entry links here.');
      const lonely = await create(companies, { Name: 'Lonely' });
      expect((await admin.get(`/entries/${lonely}`)).text).to.include('<p class="hint">No entry links here.</p>');
    });

    it('lists the first 50 and says how many there are', async () => {
      const target = await create(companies, { Name: 'Popular' });
      for (let i = 0; i < 53; i++) await create(people, { Name: `Fan ${i}`, Employer: [target] });
      const res = await admin.get(`/entries/${target}`);
      expect(res.text).to.include('<p class="hint" id="linked-from-count">First 50 of 53 entries linking here, by field, oldest first.</p>');
      const table = res.text.slice(res.text.indexOf('<table class="table" id="linked-from">'));
      const names = rowsOf(table).map((cells) => /">([^<]+)<\/a>/.exec(cells[0]!)![1]);
      expect(names).to.deep.equal(Array.from({ length: 50 }, (_, i) => `Fan ${i}`));
    });

    it("never lists another organization's entries, even a link row that points across", async () => {
      const target = await create(companies, { Name: 'Soylent' });
      const otherPeople = await h.services.entryTypes.create(other.org, {
        name: 'People',
        fields: [
          { name: 'Name', type: 'text', primary: true },
          { name: 'Employer', type: 'relationship', target: other.type.id },
        ],
      });
      const spy = await create(otherPeople, { Name: 'Spy', Employer: [other.acme] }, other.org);
      // A link no save can make (links are checked): written by hand, it still does not show.
      const link = await h.db('entry_links').where({ entry_id: spy }).first();
      await h.db('entry_links').insert({ ...link, target_entry_id: target });
      const res = await admin.get(`/entries/${target}`);
      expect(res.text).to.not.include('Spy');
      expect(res.text).to.include('<p class="hint">No entry links here.</p>');
      // And their entry's page is not ours to see.
      expect((await admin.get(`/entries/${other.acme}`)).status).to.equal(404);
    });
  });

  it('pages an entry type both ways: Next, Next, then Previous twice back to the first page, oldest first', async () => {
    const type = await h.services.entryTypes.create(t.organizationId, { name: 'Many', fields: [{ name: 'Name', type: 'text', primary: true }] });
    for (let i = 0; i < 120; i++) await h.services.entries.create(t.organizationId, type.id, { fields: { Name: `Item ${String(i).padStart(3, '0')}` } });
    const namesOn = (html: string) => [...html.matchAll(/>(Item \d{3})</g)].map((m) => m[1]);
    const link = (html: string, rel: string) => {
      const match = new RegExp(`<a class="button" href="([^"]+)" rel="${rel}">`).exec(html);
      return match ? match[1]!.replace(/&amp;/g, '&') : null;
    };
    const first = (await admin.get(`/entry-types/${type.id}`)).text;
    expect(first).to.include('<span class="pager-order">Oldest first</span>');
    expect(link(first, 'prev')).to.equal(null);
    const second = (await admin.get(link(first, 'next')!)).text;
    const third = (await admin.get(link(second, 'next')!)).text;
    expect([namesOn(first), namesOn(second), namesOn(third)].map((n) => [n[0], n.length])).to.deep.equal([
      ['Item 000', 50],
      ['Item 050', 50],
      ['Item 100', 20],
    ]);
    expect(link(third, 'next')).to.equal(null);
    const backToSecond = (await admin.get(link(third, 'prev')!)).text;
    expect(namesOn(backToSecond)).to.deep.equal(namesOn(second));
    const backToFirst = (await admin.get(link(backToSecond, 'prev')!)).text;
    expect(namesOn(backToFirst)).to.deep.equal(namesOn(first));
    expect(namesOn((await admin.get(link(third, 'first')!)).text)).to.deep.equal(namesOn(first));
  });
});
