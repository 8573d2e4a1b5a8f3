import fc from 'fast-check';
import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { entriesFixture } from '../helpers/entries-fixture.js';

/**
 * No `q`, however random or hostile, may produce a 500 or reach SQL as text: every answer is
 * a 200 page or a 400 `Invalid search query: …` in form B, and the data is untouched.
 */
for (const plan of [{ name: 'postings', driveLimit: undefined }, { name: 'read in page order', driveLimit: -1 }]) {
  describe(`entry search with random and adversarial q (property), ${plan.name}`, function () {
    this.timeout(120_000);
    let h: Harness;
    let t: Tenant;
    let url: string;
    before(async () => {
      h = await createHarness({ options: { dispatchOnAccept: false, searchDriveLimit: plan.driveLimit } });
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
