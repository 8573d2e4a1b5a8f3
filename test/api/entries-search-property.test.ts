import fc from 'fast-check';
import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { entriesFixture, insertEntriesInBulk } from '../helpers/entries-fixture.js';
import { onlyOn } from '../helpers/databases.js';
import { createPageReader } from '../../src/entries/page-reader.js';
import type { EntryTypeWithFields } from '../../src/entries/entry-type-service.js';

/**
 * No `q`, however random or hostile, may produce a 500 or reach SQL as text: every answer is
 * a 200 page or a 400 `Invalid search query: …` in form B, and the data is untouched.
 */
for (const plan of [
  { name: 'postings', driveLimit: undefined },
  { name: 'read in page order', driveLimit: -1 },
]) {
  describe(`entry search with random and adversarial q (property), ${plan.name}`, function () {
    this.timeout(120_000);
    let h: Harness;
    let t: Tenant;
    let url: string;
    before(async () => {
      h = await createHarness({ env: { READ_THREADS: '2' }, options: { dispatchOnAccept: false, searchDriveLimit: plan.driveLimit } });
      t = await h.tenant();
      const fx = await entriesFixture(h, t);
      await fx.company({ Name: 'Acme', City: 'Zurich', Employees: 10, Public: true, Founded: '2000-01-01' });
      await fx.company({ Name: "O'Reilly; DROP TABLE entries; --", City: '%_\\' });
      url = `/api/v1/entry_types/${fx.companies.id}/entries`;
    });
    after(() => h.close());

    // Pieces the grammar cares about, field names (also in other cases), SQL and LIKE specials.
    const piece = fc.oneof(
      fc.constantFrom('&&', '||', '(', ')', '"', ':', '>', '>=', '<', '<=', ' ', '  ', '\t'),
      fc.constantFrom('Name', 'city', 'EMPLOYEES', 'Public', 'Founded', 'created_at', 'updated_at', 'relationship', 'Job Title'),
      fc.constantFrom('true', 'no', '42', '-3.5', '.5', '1e9', '2020-02-30', '2026-11-21', '2026-11-21T10:00:00Z', 'NaN', 'Infinity'),
      fc.constantFrom("'", "';--", '%', '_', '\\', '`', '??', '?', '$1', ':name', 'NULL', '/*', '*/', '\u0000', 'ß', 'İ', '🙂'),
      fc.string({ maxLength: 6 }),
    );
    const query = fc.array(piece, { maxLength: 14 }).map((parts) => parts.join(''));

    it('answers 200 or a documented 400 for every q', async () => {
      await fc.assert(
        fc.asyncProperty(fc.oneof(query, fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 20 })), async (q) => {
          const res = await h.api.get(`${url}?q=${encodeURIComponent(q)}`).set(t.headers);
          if (res.status === 200) {
            expect(res.body.error).to.equal(null);
            expect(res.body.data).to.be.an('array');
          } else {
            expect(res.status, `q=${JSON.stringify(q)} → ${res.text}`).to.equal(400);
            expect(Object.keys(res.body)).to.deep.equal(['data', 'meta', 'error']);
            expect(res.body.data).to.equal(null);
            expect(res.body.meta).to.deep.equal({});
            expect(res.body.error).to.match(/^Invalid search query: .+/);
          }
        }),
        { numRuns: Number(process.env.PROPERTY_RUNS ?? 600) },
      );
      expect(Number((await h.db('entries').count({ n: '*' }).first())!.n), 'nothing was changed').to.equal(2);
    });

    it('answers 200 for control characters, which the text index cannot take (found by this property)', async () => {
      for (const q of ['\u0000\u0000\u0000', '\u0000true', 'Name:\u0001abc', 'ab\u001fcd']) {
        const res = await h.api.get(`${url}?q=${encodeURIComponent(q)}`).set(t.headers);
        expect(res.status, JSON.stringify(q)).to.equal(200);
      }
    });

    it('finds a hostile value by searching for it literally', async () => {
      const res = await h.api.get(`${url}?q=${encodeURIComponent('"; drop table entries; --"')}`).set(t.headers);
      expect(res.status).to.equal(200);
      expect(res.body.data.map((e: { fields: { Name: string } }) => e.fields.Name)).to.deep.equal(["O'Reilly; DROP TABLE entries; --"]);
      const city = await h.api.get(`${url}?q=${encodeURIComponent('City:%_\\')}`).set(t.headers);
      expect(city.body.data).to.have.length(1);
    });
  });
}

describe('entry search with random && / || trees of up to 20 terms on 3,000 entries (property)', function () {
  this.timeout(120_000);
  let h: Harness;
  let t: Tenant;
  let url: string;
  let scanned: ReturnType<typeof createPageReader>;
  let companies: EntryTypeWithFields;

  before(async () => {
    h = await createHarness({ env: { READ_THREADS: '2' }, options: { dispatchOnAccept: false } });
    t = await h.tenant();
    const fx = await entriesFixture(h, t);
    companies = await h.services.entryTypes.get(t.organizationId, fx.companies.id);
    const cities = ['Zurich', 'Geneva', 'Basel', 'Bern', 'Lugano', 'Chur'];
    const base = Date.parse('2026-01-01T00:00:00.000Z');
    await insertEntriesInBulk(
      h.db,
      companies,
      Array.from({ length: 3000 }, (_, i) => ({
        fields: {
          Name: `${['Acme', 'Globex', 'Initech', 'Umbrella', 'Hooli'][i % 5]} ${i}`,
          City: cities[i % 6]!,
          Employees: (i * 37) % 1000,
          Public: i % 3 === 0,
          Founded: new Date(base - (i % 4000) * 86_400_000).toISOString().slice(0, 10),
        },
        createdAt: new Date(base + i * 1000).toISOString(),
        draft: i % 97 === 0,
      })),
    );
    url = `/api/v1/entry_types/${fx.companies.id}/entries`;
    // The same search read in page order in this thread, every term checked on every entry.
    scanned = createPageReader({ db: h.db, searchDriveLimit: -1 });
    // The first read starts the read threads, which here compile the sources first: on a
    // loaded machine that alone can take seconds, and this property is about searches.
    expect((await h.api.get(`${url}?limit=1`).set(t.headers)).status).to.equal(200);
  });
  after(() => h.close());

  const term = fc.oneof(
    fc.constantFrom('ab', 'zu', 'o', 'acme', 'globex 12', 'hooli 29', 'ur', 'qq', 'zz', 'ri', 'umbrella', 'initech 3'),
    fc.constantFrom('zurich', 'ge', 'bern', 'lu', 'x', 'ch', 'asel', 'qz').map((v) => `City:${v}`),
    fc.constantFrom('acme 1', 'ho', 'q', 'globex', '29').map((v) => `Name:${v}`),
    fc.tuple(fc.constantFrom('>', '>=', '<', '<=', ':'), fc.integer({ min: -5, max: 1005 })).map(([op, n]) => `Employees${op}${n}`),
    fc.constantFrom('true', 'false', 'yes', 'no').map((v) => `Public:${v}`),
    fc
      .tuple(fc.constantFrom('>', '<', ':'), fc.integer({ min: 0, max: 4000 }))
      .map(([op, d]) => `Founded${op}${new Date(Date.parse('2026-01-01') - d * 86_400_000).toISOString().slice(0, 10)}`),
    fc.tuple(fc.constantFrom('>', '<'), fc.integer({ min: 0, max: 3000 })).map(([op, s]) => `created_at${op}${new Date(Date.parse('2026-01-01') + s * 1000).toISOString()}`),
  );
  type Tree = string | { op: '&&' | '||'; items: Tree[] };
  const tree: fc.Arbitrary<Tree> = fc.letrec<{ node: Tree }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      term,
      fc.record({ op: fc.constantFrom('&&' as const, '||' as const), items: fc.array(tie('node'), { minLength: 2, maxLength: 6 }) }),
    ),
  })).node;
  const leaves = (node: Tree): number => (typeof node === 'string' ? 1 : node.items.reduce((n, item) => n + leaves(item), 0));
  const render = (node: Tree): string => (typeof node === 'string' ? node : `(${node.items.map(render).join(` ${node.op} `)})`);

  it('answers every query well within the deadline, with what reading every entry finds, in the same order', async () => {
    await fc.assert(
      fc.asyncProperty(
        tree.filter((node) => leaves(node) <= 20),
        fc.constantFrom(1, 7, 100),
        async (node, limit) => {
          const q = render(node);
          const started = Date.now();
          const res = await h.api.get(`${url}?limit=${limit}&q=${encodeURIComponent(q)}`).set(t.headers);
          expect(res.status, `q=${q} → ${res.text.slice(0, 200)}`).to.equal(200);
          expect(Date.now() - started, q).to.be.lessThan(5000);
          const expected = await scanned.listJson(companies, { q, limit, includeDrafts: false, includeArchived: false });
          expect(
            res.body.data.map((e: { id: string }) => e.id),
            q,
          ).to.deep.equal(expected.entries.map((json) => (JSON.parse(json) as { id: string }).id));
          expect(res.body.meta.next_cursor, q).to.equal(expected.nextCursor);
        },
      ),
      { numRuns: Number(process.env.PROPERTY_RUNS ?? 150) },
    );
  });
});

onlyOn('postgres')('entry search on SQLite and PostgreSQL, same data and same q (property)', function () {
  this.timeout(180_000);
  const sides: Array<{ h: Harness; t: Tenant; url: string }> = [];

  before(async () => {
    const cities = ['Zurich', 'Geneva', 'Basel', 'Bern', 'Lugano', 'Chur'];
    const base = Date.parse('2026-01-01T00:00:00.000Z');
    const entries = Array.from({ length: 2000 }, (_, i) => ({
      fields: {
        Name: `${['Acme', 'Globex', 'Initech', 'Umbrella', 'Hooli'][i % 5]} ${i}`,
        City: i % 50 === 0 ? "O'Reilly %_\\ Straße" : cities[i % 6]!,
        Employees: (i * 37) % 1000,
        Public: i % 3 === 0,
        Founded: new Date(base - (i % 4000) * 86_400_000).toISOString().slice(0, 10),
      },
      createdAt: new Date(base + i * 1000).toISOString(),
      draft: i % 97 === 0,
    }));
    for (const database of ['sqlite', 'postgres'] as const) {
      const h = await createHarness({ database, env: { READ_THREADS: '2' }, options: { dispatchOnAccept: false } });
      const t = await h.tenant();
      const fx = await entriesFixture(h, t);
      await insertEntriesInBulk(h.db, await h.services.entryTypes.get(t.organizationId, fx.companies.id), entries);
      sides.push({ h, t, url: `/api/v1/entry_types/${fx.companies.id}/entries` });
    }
  });
  after(async () => {
    for (const side of sides) await side.h.close();
  });

  const term = fc.oneof(
    fc.constantFrom('ab', 'zu', 'o', 'acme', 'globex 12', 'hooli 29', 'ur', 'qq', 'ri', 'straße', "o'reilly", '%_', 'STRASSE'),
    fc.constantFrom('zurich', 'ge', 'bern', 'lu', 'x', 'ch', 'asel', '\\').map((v) => `City:${v}`),
    fc.constantFrom('acme 1', 'ho', 'q', '29').map((v) => `Name:${v}`),
    fc.tuple(fc.constantFrom('>', '>=', '<', '<=', ':'), fc.integer({ min: -5, max: 1005 })).map(([op, n]) => `Employees${op}${n}`),
    fc.constantFrom('true', 'false', 'yes', 'no', 'maybe').map((v) => `Public:${v}`),
    fc
      .tuple(fc.constantFrom('>', '<', ':'), fc.integer({ min: 0, max: 4000 }))
      .map(([op, d]) => `Founded${op}${new Date(Date.parse('2026-01-01') - d * 86_400_000).toISOString().slice(0, 10)}`),
    fc.tuple(fc.constantFrom('>', '<'), fc.integer({ min: 0, max: 2000 })).map(([op, s]) => `created_at${op}${new Date(Date.parse('2026-01-01') + s * 1000).toISOString()}`),
    fc.constantFrom('Employees:many', 'Founded>soon', '(', '"unclosed', '&& x', '\u0000'),
  );
  const q = fc
    .array(fc.tuple(term, fc.constantFrom(' && ', ' || ', ' ')), { minLength: 1, maxLength: 8 })
    .map((parts) => parts.map(([t, op], i) => (i === 0 ? t : `${op}${t}`)).join(''));

  it('answers the same entries in the same order, or the same 400, on both databases', async () => {
    await fc.assert(
      fc.asyncProperty(q, fc.constantFrom(1, 25, 100), async (query, limit) => {
        const [sqlite, postgres] = await Promise.all(sides.map(({ h, t, url }) => h.api.get(`${url}?limit=${limit}&q=${encodeURIComponent(query)}`).set(t.headers)));
        const answer = (res: { status: number; body: { data: Array<{ fields: { Name: string } }> | null; error: string | null; meta: object } }) => ({
          status: res.status,
          names: res.body.data?.map((e) => e.fields.Name) ?? null,
          error: res.body.error,
          more: Boolean((res.body.meta as { next_cursor?: string | null }).next_cursor),
        });
        expect(answer(postgres!), `q=${query}`).to.deep.equal(answer(sqlite!));
      }),
      { numRuns: Number(process.env.PROPERTY_RUNS ?? 300) },
    );
  });
});
