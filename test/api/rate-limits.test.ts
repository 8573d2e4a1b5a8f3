import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';

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
    const submit = await h.api.post(`/api/v1/scribes/${t.scribe.slug}/requests`).set(t.headers).send({ task: { summary: 'x' } });
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
