import { expect } from 'chai';
import { createHarness, eventually, type Harness, type Tenant } from '../helpers/harness.js';

describe('API key authentication', () => {
  let h: Harness;
  let t: Tenant;
  before(async () => {
    h = await createHarness({ options: { dispatchOnAccept: false } });
    t = await h.tenant();
  });
  after(() => h.close());

  const dispatchPaths = () =>
    [
      ['get', '/api/v1/scribes/atlas/requests'],
      ['post', '/api/v1/scribes/atlas/requests'],
      ['get', '/api/v1/requests/req_01JD0000000000000000000000'],
    ] as const;

  it('answers 401 "API key is required" in form A when the header is missing', async () => {
    for (const [method, path] of dispatchPaths()) {
      const res = await h.api[method](path);
      expect(res.status, `${method} ${path}`).to.equal(401);
      expect(res.body).to.deep.equal({ error: 'API key is required' });
    }
  });

  it('answers 401 "API key is required" when the header is empty', async () => {
    const res = await h.api.get('/api/v1/scribes/atlas/requests').set('X-Api-Key', '');
    expect(res.status).to.equal(401);
    expect(res.body).to.deep.equal({ error: 'API key is required' });
  });

  it('answers 401 "Invalid API key" in form A for a key that matches nothing', async () => {
    for (const [method, path] of dispatchPaths()) {
      const res = await h.api[method](path).set('X-Api-Key', 'sk_not-a-real-key');
      expect(res.status, `${method} ${path}`).to.equal(401);
      expect(res.body).to.deep.equal({ error: 'Invalid API key' });
    }
  });

  it('refuses a revoked key', async () => {
    const { key, id } = await h.services.organizations.createApiKey({ organizationId: t.organizationId });
    expect((await h.api.get('/api/v1/scribes/atlas/requests').set('X-Api-Key', key)).status).to.equal(200);
    await h.services.organizations.revokeApiKey(id);
    const res = await h.api.get('/api/v1/scribes/atlas/requests').set('X-Api-Key', key);
    expect(res.status).to.equal(401);
    expect(res.body).to.deep.equal({ error: 'Invalid API key' });
  });

  it('refuses a revoked key at once, even while other calls with it are being checked (lookups are shared only by calls that arrived before they started)', async () => {
    const { key, id } = await h.services.organizations.createApiKey({ organizationId: t.organizationId });
    const call = () =>
      h.api
        .get('/api/v1/scribes/atlas/requests')
        .set('X-Api-Key', key)
        .then((res) => res.status);
    const before = Array.from({ length: 40 }, call);
    await h.services.organizations.revokeApiKey(id);
    const after = await Promise.all(Array.from({ length: 20 }, call));
    expect(after).to.deep.equal(Array.from({ length: 20 }, () => 401));
    expect((await Promise.all(before)).every((status) => status === 200 || status === 401)).to.equal(true);
  });

  it('checks the key before anything else, even a malformed body', async () => {
    const res = await h.api.post('/api/v1/scribes/nobody/requests').set('Content-Type', 'application/json').send('{oops');
    expect(res.status).to.equal(401);
    expect(res.body).to.deep.equal({ error: 'API key is required' });
  });

  it('stores only a hash and a short prefix of each key', async () => {
    const row = await h.db('api_keys').where({ id: t.keyId }).first();
    expect(row.key_hash).to.match(/^[0-9a-f]{64}$/);
    expect(row.key_hash).to.not.include(t.key);
    expect(row.prefix).to.equal(t.key.slice(0, 10));
    const dump = JSON.stringify(await h.db('api_keys').select());
    expect(dump).to.not.include(t.key);
  });

  it('records last use without a write on every call', async () => {
    const tenant = await h.tenant();
    const before = await h.db('api_keys').where({ id: tenant.keyId }).first();
    expect(before.last_used_at).to.equal(null);
    await h.api.get('/api/v1/scribes/atlas/requests').set(tenant.headers).expect(200);
    // Written after the answer, off the request's path.
    const first = await eventually(async () => (await h.db('api_keys').where({ id: tenant.keyId }).first()).last_used_at ?? undefined);
    expect(first).to.be.a('string');
    await h.db('api_keys').where({ id: tenant.keyId }).update({ last_used_at: 'sentinel' });
    await h.api.get('/api/v1/scribes/atlas/requests').set(tenant.headers).expect(200);
    const second = await h.db('api_keys').where({ id: tenant.keyId }).first();
    expect(second.last_used_at, 'a second call within a minute does not write').to.equal('sentinel');
  });
});
