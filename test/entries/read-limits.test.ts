import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { entriesFixture, insertEntriesInBulk, type EntriesFixture } from '../helpers/entries-fixture.js';
import { DeadlinePassedError, openDatabase } from '../../src/db/knex.js';
import { SearchGate } from '../../src/entries/search-gate.js';
import { onlyOn } from '../helpers/databases.js';

const BUSY_WORKER = new URL('../helpers/busy-read-worker.ts', import.meta.url);

onlyOn('sqlite')('within_deadline (db/knex.ts)', () => {
  it('fails a statement that reads on past its deadline, and the connection goes on serving', async () => {
    const db = openDatabase(':memory:');
    try {
      const endless = 'with recursive c(x) as (select 1 union all select x + 1 from c where within_deadline(?)) select count(*) as n from c';
      const started = Date.now();
      const failure = await db.raw(endless, [Date.now() + 50]).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(failure).to.be.instanceOf(DeadlinePassedError);
      expect(Date.now() - started).to.be.lessThan(2000);
      expect(await db.raw('select 1 + 1 as two')).to.deep.equal([{ two: 2 }]);
    } finally {
      await db.destroy();
    }
  });
});

describe('SearchGate', () => {
  it('runs at most N of one organization at once, the others in order, and others organizations beside them', async () => {
    const gate = new SearchGate(1);
    const started: string[] = [];
    const releases = new Map<string, () => void>();
    const search = (org: string, name: string, signal = new AbortController().signal) =>
      gate.run(org, signal, () => new Promise<string>((resolve) => (started.push(name), releases.set(name, () => resolve(name)))));
    const a1 = search('a', 'a1');
    const a2 = search('a', 'a2');
    const a3 = search('a', 'a3');
    const b1 = search('b', 'b1');
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).to.deep.equal(['a1', 'b1']);
    expect(gate.load('a')).to.deep.equal({ running: 1, waiting: 2 });
    releases.get('a1')!();
    expect(await a1).to.equal('a1');
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).to.deep.equal(['a1', 'b1', 'a2']);
    releases.get('a2')!();
    releases.get('b1')!();
    await Promise.all([a2, b1]);
    await new Promise((resolve) => setImmediate(resolve));
    releases.get('a3')!();
    expect(await a3).to.equal('a3');
    expect(gate.load('a')).to.deep.equal({ running: 0, waiting: 0 });
  });

  it('lets a waiting search give up when its signal aborts, and keeps the queue for the others', async () => {
    const gate = new SearchGate(1);
    let release!: () => void;
    const first = gate.run('a', new AbortController().signal, () => new Promise<void>((resolve) => (release = resolve)));
    const giveUp = new AbortController();
    const waiting = gate.run('a', giveUp.signal, async () => 'ran');
    const after = gate.run('a', new AbortController().signal, async () => 'after');
    giveUp.abort(new Error('gone'));
    expect(
      await waiting.then(
        () => 'ran',
        (err: Error) => err.message,
      ),
    ).to.equal('gone');
    expect(gate.load('a')).to.deep.equal({ running: 1, waiting: 1 });
    release();
    await first;
    expect(await after).to.equal('after');
    expect(gate.load('a')).to.deep.equal({ running: 0, waiting: 0 });
  });
});

describe('entry reads under a deadline (entries/read-workers.ts, page-reader.ts)', function () {
  this.timeout(60_000);
  let h: Harness;
  let t: Tenant;
  let fx: EntriesFixture;

  before(async () => {
    // A deadline of 1 ms, which reading 20,000 entries always outlasts.
    h = await createHarness({ env: { READ_THREADS: '2' }, options: { dispatchOnAccept: false, searchDriveLimit: -1, reads: { timeoutMs: 1 } } });
    t = await h.tenant();
    fx = await entriesFixture(h, t);
    const companies = await h.services.entryTypes.get(t.organizationId, fx.companies.id);
    const base = Date.parse('2026-01-01T00:00:00.000Z');
    const entries = Array.from({ length: 20_000 }, (_, i) => ({ fields: { Name: `Company ${i}`, City: `City ${i % 100}` }, createdAt: new Date(base + i).toISOString() }));
    await insertEntriesInBulk(h.db, companies, entries);
  });
  after(() => h.close());

  it('answers 503 "Search timed out" in form B when a search reads past its deadline; the statement stops (by itself on SQLite, where the thread goes on; cancelled on PostgreSQL)', async () => {
    const q = Array.from({ length: 20 }, (_, i) => `City:${String.fromCharCode(97 + i)}q`).join(' || ');
    const url = `/api/v1/entry_types/${fx.companies.id}/entries?q=${encodeURIComponent(q)}&limit=1000`;
    await h.api.get(url).set(t.headers);
    const threads = () => h.services.readWorkers?.threads.map((thread) => thread.threadId).sort();
    const before = threads();
    const res = await h.api.get(url).set(t.headers);
    expect(res.status).to.equal(503);
    expect(res.body).to.deep.equal({ data: null, meta: {}, error: 'Search timed out' });
    expect(threads(), 'no thread was terminated').to.deep.equal(before);
    expect((await h.api.get(`/api/v1/entry_types/${fx.companies.id}/entries?limit=1`).set(t.headers)).status, 'the connection serves on').to.be.oneOf([200, 503]);
  });
});

onlyOn('sqlite')('entry reads that do not end by themselves, cancelled reads, and fairness (entries/read-workers.ts)', function () {
  this.timeout(60_000);
  let h: Harness;
  let t: Tenant;
  let other: Tenant;
  let fx: EntriesFixture;
  let otherFx: EntriesFixture;
  const list = (tenant: Tenant, typeId: string, query: string) =>
    h.api
      .get(`/api/v1/entry_types/${typeId}/entries?${query}`)
      .set(tenant.headers)
      .then((res) => res);

  before(async () => {
    h = await createHarness({ env: { READ_THREADS: '2' }, options: { dispatchOnAccept: false, reads: { timeoutMs: 400, workerFile: BUSY_WORKER } } });
    t = await h.tenant();
    other = await h.tenant({ slug: 'other' });
    fx = await entriesFixture(h, t);
    otherFx = await entriesFixture(h, other);
    for (let i = 0; i < 10; i++) await fx.company({ Name: `Company ${i}` });
    await otherFx.company({ Name: 'Elsewhere' });
  });
  after(() => h.close());

  const threadIds = () => h.services.readWorkers!.threads.map((thread) => thread.threadId).sort();
  const load = () => h.services.readWorkers!.searchLoad(t.organizationId);
  /** Waits up to 10 s (a new read thread starts slowly on a loaded machine); the expect after it says what did not happen. */
  const until = async (condition: () => boolean) => {
    for (const started = Date.now(); !condition() && Date.now() - started < 10_000; ) await new Promise((resolve) => setTimeout(resolve, 10));
  };
  /** A search that outlasts its first 50 ms moves to the slow lane, whose threads start then (which may take longer than 400 ms under tsx). */
  const bothLanesStarted = async () => {
    for (let i = 0; i < 20; i++) if ((await list(t, fx.companies.id, 'q=busy:100')).status === 200) return;
    expect.fail('the slow lane never answered');
  };

  it('terminates the thread of a read that does not stop by itself, answers 503 and serves on with a new thread', async () => {
    await bothLanesStarted();
    const before = threadIds();
    const started = Date.now();
    const res = await list(t, fx.companies.id, 'q=busy:30000');
    expect(res.status).to.equal(503);
    expect(res.body).to.deep.equal({ data: null, meta: {}, error: 'Search timed out' });
    expect(Date.now() - started).to.be.lessThan(5000);
    await until(() => threadIds().length === before.length);
    expect(threadIds()).to.not.deep.equal(before);
    expect(threadIds()).to.have.length(before.length);
    expect((await list(t, fx.companies.id, 'q=Company 7&limit=1')).status).to.equal(200);
  });

  it('stops the search of a client that hangs up', async () => {
    await bothLanesStarted();
    const before = threadIds();
    const server = http.createServer(h.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const req = http.get({ port, host: '127.0.0.1', path: `/api/v1/entry_types/${fx.companies.id}/entries?q=busy:30000`, headers: t.headers });
      req.on('error', () => undefined);
      await until(() => load().running === 1);
      expect(load().running).to.equal(1);
      req.destroy();
      await until(() => load().running === 0);
      expect(load().running, 'the search ended with its client').to.equal(0);
      await until(() => threadIds().length === before.length);
      expect(threadIds(), 'its thread was terminated and replaced').to.not.deep.equal(before);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('sends a search that outlasted its 50 ms lately straight to the slow lane', async () => {
    await bothLanesStarted();
    expect(h.services.readWorkers!.knownSlow(fx.companies.id, 'busy:100')).to.equal(true);
    expect(h.services.readWorkers!.knownSlow(fx.companies.id, 'busy:101')).to.equal(false);
    // A search well within its 50 ms is not remembered as slow. On a loaded machine a thread can
    // be kept off the core past the budget, which rightly counts: of three such searches, one
    // taking its few milliseconds is enough to show it (a lane that marked every search would mark all three).
    const quick = ['busy:5', 'busy:6', 'busy:7'];
    for (const q of quick) expect((await list(t, fx.companies.id, `q=${q}`)).status).to.equal(200);
    expect(
      quick.some((q) => !h.services.readWorkers!.knownSlow(fx.companies.id, q)),
      'within its budget',
    ).to.equal(true);
    expect((await list(t, fx.companies.id, 'q=busy:100')).status).to.equal(200);
  });

  it("answers a page, and another tenant's search, while two slow searches of one tenant run", async () => {
    // Both kinds of thread started (as on a server that has been serving for a while).
    await Promise.all([list(t, fx.companies.id, 'limit=1'), list(other, otherFx.companies.id, 'q=warm')]);
    // Busy far past the moment its thread is terminated (400 ms and a second after it started): on
    // a loaded machine the server's timer can come a little late, and must still come first.
    const slow = [list(t, fx.companies.id, 'q=busy:5000'), list(t, fx.companies.id, 'q=busy:5000')];
    await until(() => load().waiting === 1);
    // Two read threads: the tenant gets one for its searches, the second waits its turn.
    expect(load()).to.deep.equal({ running: 1, waiting: 1 });
    const started = Date.now();
    const page = await list(t, fx.companies.id, 'limit=5');
    expect(page.status).to.equal(200);
    expect(page.body.data).to.have.length(5);
    const elsewhere = await list(other, otherFx.companies.id, 'q=Elsewhere');
    expect(elsewhere.body.data.map((e: { fields: { Name: string } }) => e.fields.Name)).to.deep.equal(['Elsewhere']);
    expect(Date.now() - started, 'neither waited for the slow searches').to.be.lessThan(1000);
    // Each slow search ran out of its 400 ms: the first while running, the second while waiting.
    expect((await Promise.all(slow)).map((r) => r.status)).to.deep.equal([503, 503]);
  });
});
