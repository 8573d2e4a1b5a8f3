import { expect } from 'chai';
import { onlyOn } from '../helpers/databases.js';
import { entriesFixture, entriesSuite } from '../helpers/entries-fixture.js';
import { createHarness } from '../helpers/harness.js';
import { createPageReader } from '../../src/entries/page-reader.js';
import { createReadWorkers } from '../../src/entries/read-workers.js';

// Read threads serve SQLite, whose reads would block the server's thread; PostgreSQL reads are asynchronous.
onlyOn('sqlite')('entry pages read in worker threads (entries/read-workers.ts)', () => {
  const suite = entriesSuite();
  const typeOf = () => suite.h.services.entryTypes.get(suite.t.organizationId, suite.fx.companies.id);
  const list = (query: string) => suite.h.api.get(`/api/v1/entry_types/${suite.fx.companies.id}/entries?${query}`).set(suite.t.headers);

  before(async () => {
    for (let i = 0; i < 30; i++) {
      await suite.fx.company({ Name: `Company ${i}`, City: i % 3 ? 'Zurich' : 'Geneva', Employees: i }, { draft: i === 7, archived: i === 8 });
    }
  });

  it('uses threads for the API, which answer what the server thread reads, errors included', async () => {
    const inThread = createPageReader({ db: suite.h.db });
    const first = await list('limit=4&q=Geneva');
    expect(suite.h.services.readWorkers?.threads.length).to.be.greaterThanOrEqual(2);
    const cases = [
      { limit: 4, q: 'Geneva' },
      { limit: 4, q: 'Geneva', after: first.body.meta.next_cursor as string },
      { limit: 100, q: 'Employees>=10 && (City:zur || company)', include_drafts: 'true', include_archived: 'true' },
      { limit: 3 },
      { limit: 5, q: 'City:' },
      { limit: 5, after: 'not-a-cursor' },
    ];
    for (const c of cases) {
      const query = new URLSearchParams(Object.entries(c).map(([k, v]) => [k, String(v)])).toString();
      const res = await list(query);
      const options = { limit: c.limit, q: c.q, after: c.after, includeDrafts: 'include_drafts' in c, includeArchived: 'include_archived' in c };
      const expected = await inThread.listJson(await typeOf(), options).then(
        (page) => ({ status: 200, data: page.entries.map((json) => JSON.parse(json) as unknown), cursor: page.nextCursor, error: null }),
        (err: Error & { status: number }) => ({ status: err.status, data: null, cursor: undefined, error: err.message }),
      );
      expect(res.status, query).to.equal(expected.status);
      expect(res.body.data, query).to.deep.equal(expected.data);
      expect(res.body.error, query).to.equal(expected.error);
      if (res.status === 200) expect(res.body.meta.next_cursor, query).to.equal(expected.cursor);
    }
    expect((await list('q=City:')).body.error).to.equal('Invalid search query: "City:" needs a value at position 0');
    expect((await list('after=not-a-cursor')).body.error).to.equal('Invalid cursor format');
  });

  it('finds an entry as soon as the write that made it has returned', async () => {
    for (let i = 0; i < 10; i++) {
      const entry = await suite.fx.company({ Name: `Fresh ${i}` });
      const res = await list(`q=${encodeURIComponent(`Name:Fresh ${i}`)}`);
      expect(res.body.data.map((e: { id: string }) => e.id)).to.deep.equal([entry.id]);
    }
  });

  it('replaces a thread that dies, and goes on serving', async () => {
    const workers = suite.h.services.readWorkers!;
    await list('q=Geneva');
    await Promise.all(workers.threads.map((thread) => thread.terminate()));
    for (let i = 0; i < 4; i++) expect((await list('q=Geneva')).status).to.equal(200);
    expect(workers.threads.length).to.be.greaterThanOrEqual(2);
  });

  it('lets the reads under way finish when it closes', async () => {
    const workers = createReadWorkers({ threads: 1, databaseFile: suite.h.config.databaseUrl });
    const type = await typeOf();
    const reads = Array.from({ length: 8 }, () => workers.listJson(type, { limit: 5, includeDrafts: false, includeArchived: false }));
    await workers.close();
    for (const page of await Promise.all(reads)) expect(page.entries).to.have.length(5);
  });
});

describe('entry pages read in the server thread (READ_THREADS=0)', () => {
  it('starts no threads and serves the same API', async () => {
    const h = await createHarness({ env: { READ_THREADS: '0' }, options: { dispatchOnAccept: false } });
    try {
      const t = await h.tenant();
      const fx = await entriesFixture(h, t);
      const acme = await fx.company({ Name: 'Acme', City: 'Zurich' });
      expect(h.services.readWorkers).to.equal(undefined);
      const res = await h.api.get(`/api/v1/entry_types/${fx.companies.id}/entries?q=zurich`).set(t.headers);
      expect(res.status).to.equal(200);
      expect(res.body.data.map((e: { id: string }) => e.id)).to.deep.equal([acme.id]);
      const bad = await h.api.get(`/api/v1/entry_types/${fx.companies.id}/entries?q=${encodeURIComponent('(')}`).set(t.headers);
      expect(bad.status).to.equal(400);
      expect(bad.body.error).to.match(/^Invalid search query: /);
    } finally {
      await h.close();
    }
  });
});
