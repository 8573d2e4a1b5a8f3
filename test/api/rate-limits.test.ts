import { expect } from 'chai';
import type { Options } from 'express-rate-limit';
import { createHarness, testClock, type Harness, type Tenant } from '../helpers/harness.js';
import { openDatabase, type Db } from '../../src/db/knex.js';
import { DatabaseRateLimitStore } from '../../src/http/rate-limit-store.js';

describe('API rate limits (RATE_LIMIT_PER_MINUTE)', () => {
  let h: Harness;
  let t: Tenant;
  beforeEach(async () => {
    h = await createHarness({ env: { RATE_LIMIT_PER_MINUTE: '3' }, options: { dispatchOnAccept: false } });
    t = await h.tenant();
  });
  afterEach(() => h.close());

  const list = (headers: Record<string, string>) => h.api.get(`/api/v1/scribes/${t.scribe.slug}/requests`).set(headers);

  it('allows the limit per key per minute, then answers 429 "Rate limit exceeded" with Retry-After and RateLimit headers', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await list(t.headers);
      expect(res.status).to.equal(200);
      expect(res.headers.ratelimit).to.match(new RegExp(`r=${2 - i}\\b`));
      expect(res.headers['ratelimit-policy']).to.match(/q=3; w=60/);
    }
    const refused = await list(t.headers);
    expect(refused.status).to.equal(429);
    expect(refused.body).to.deep.equal({ error: 'Rate limit exceeded' });
    expect(Number(refused.headers['retry-after'])).to.be.within(1, 60);
    expect(refused.headers.ratelimit).to.match(/r=0\b/);
  });

  it('answers the entries family in form B', async () => {
    for (let i = 0; i < 3; i++) await h.api.get('/api/v1/entries/01935f00-0000-7000-8000-000000000000').set(t.headers);
    const refused = await h.api.get('/api/v1/entries/01935f00-0000-7000-8000-000000000000').set(t.headers);
    expect(refused.status).to.equal(429);
    expect(refused.body).to.deep.equal({ data: null, meta: {}, error: 'Rate limit exceeded' });
  });

  it('counts each key on its own, and creates nothing for a refused submit', async () => {
    const other = await h.tenant({ slug: 'other' });
    for (let i = 0; i < 3; i++) await list(t.headers);
    expect((await list(t.headers)).status).to.equal(429);
    expect((await h.api.get(`/api/v1/scribes/${other.scribe.slug}/requests`).set(other.headers)).status).to.equal(200);
    const submit = await h.api
      .post(`/api/v1/scribes/${t.scribe.slug}/requests`)
      .set(t.headers)
      .send({ task: { summary: 'x' } });
    expect(submit.status).to.equal(429);
    expect(await h.db('requests').count({ n: '*' }).first()).to.deep.equal({ n: 0 });
  });

  it('limits calls without a valid key per client address, counting only the refused ones', async () => {
    for (let i = 0; i < 3; i++) expect((await list({ 'X-Api-Key': 'sk_wrong' })).status).to.equal(401);
    const refused = await list({});
    expect(refused.status).to.equal(429);
    expect(refused.body).to.deep.equal({ error: 'Rate limit exceeded' });
  });

  it('lets a valid key through from an address that is over its limit of refused calls, and does not count it there', async () => {
    for (let i = 0; i < 3; i++) expect((await list({ 'X-Api-Key': 'sk_wrong' })).status).to.equal(401);
    expect((await list({ 'X-Api-Key': 'sk_wrong' })).status).to.equal(429);
    const res = await list(t.headers);
    expect(res.status).to.equal(200);
    expect(res.headers.ratelimit, "the key's own count").to.match(/r=2\b/);
    const counters = await h.db('rate_limit_hits').orderBy('key').select('key', 'hits');
    expect(counters.map((c) => [c.key.split(':')[0], Number(c.hits)])).to.deep.equal([
      ['api-key', 1],
      ['unauthenticated', 4],
    ]);
  });

  it('is off with RATE_LIMIT_PER_MINUTE=0', async () => {
    const open = await createHarness({ env: { RATE_LIMIT_PER_MINUTE: '0' } });
    try {
      const o = await open.tenant();
      for (let i = 0; i < 10; i++) {
        const res = await open.api.get(`/api/v1/scribes/${o.scribe.slug}/requests`).set(o.headers);
        expect(res.status).to.equal(200);
        expect(res.headers).to.not.have.property('ratelimit');
      }
    } finally {
      await open.close();
    }
  });
});

describe('DatabaseRateLimitStore (http/rate-limit-store.ts)', () => {
  let h: Harness;
  let second: Db;
  let clock: ReturnType<typeof testClock>;
  beforeEach(async () => {
    clock = testClock('2026-11-21T09:00:00.000Z');
    h = await createHarness({ options: { dispatchOnAccept: false } });
    // A second connection pool on the same database: another process's store.
    second = openDatabase(h.config.databaseUrl, { poolSize: 4 });
  });
  afterEach(async () => {
    await second.destroy();
    await h.close();
  });

  function store(db: Db) {
    const s = new DatabaseRateLimitStore(db, clock, 'api-key');
    s.init({ windowMs: 60_000 } as Options);
    return s;
  }

  it('gives 60 concurrent calls of one key, over two processes, each its own count from 1 to 60, with fewer writes than calls', async () => {
    let upserts = 0;
    const countUpserts = (q: { sql: string }) => {
      if (q.sql.startsWith('insert into')) upserts += 1;
    };
    h.db.on('query', countUpserts);
    second.on('query', countUpserts);
    const [a, b] = [store(h.db), store(second)];
    const infos = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).increment('k1')));
    expect(infos.map((info) => info.totalHits).sort((x, y) => x - y)).to.deep.equal(Array.from({ length: 60 }, (_, i) => i + 1));
    expect(new Set(infos.map((info) => info.resetTime!.toISOString()))).to.deep.equal(new Set(['2026-11-21T09:01:00.000Z']));
    const row = await h.db('rate_limit_hits').where({ key: 'api-key:k1' }).first('hits');
    expect(Number(row.hits)).to.equal(60);
    expect(upserts, 'calls that arrive while an upsert runs are added by the next one').to.be.within(2, 10);
  });

  it('starts a new window for a group of calls when the old one has ended, counting from 1', async () => {
    const s = store(h.db);
    await Promise.all(Array.from({ length: 5 }, () => s.increment('k2')));
    clock.advance(60_000);
    const infos = await Promise.all(Array.from({ length: 4 }, () => s.increment('k2')));
    expect(infos.map((info) => info.totalHits).sort()).to.deep.equal([1, 2, 3, 4]);
    expect(infos[0]!.resetTime!.toISOString()).to.equal('2026-11-21T09:02:00.000Z');
  });

  it('fails every call of a group whose write failed, and counts the next calls afresh', async () => {
    const s = store(h.db);
    await h.db.schema.renameTable('rate_limit_hits', 'rate_limit_hits_away');
    const failed = await Promise.allSettled(Array.from({ length: 3 }, () => s.increment('k3')));
    expect(failed.map((r) => r.status)).to.deep.equal(['rejected', 'rejected', 'rejected']);
    await h.db.schema.renameTable('rate_limit_hits_away', 'rate_limit_hits');
    expect((await s.increment('k3')).totalHits).to.equal(1);
  });
});

describe('API rate limits under concurrent calls', () => {
  it('lets exactly the limit through when 20 calls with one key arrive at once', async () => {
    const h = await createHarness({ env: { RATE_LIMIT_PER_MINUTE: '10' }, options: { dispatchOnAccept: false } });
    try {
      const t = await h.tenant();
      const statuses = await Promise.all(
        Array.from({ length: 20 }, () =>
          h.api
            .get(`/api/v1/scribes/${t.scribe.slug}/requests`)
            .set(t.headers)
            .then((res) => res.status),
        ),
      );
      expect(statuses.filter((s) => s === 200)).to.have.length(10);
      expect(statuses.filter((s) => s === 429)).to.have.length(10);
    } finally {
      await h.close();
    }
  });
});
