import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { failInsertsWhen } from '../helpers/databases.js';

describe('API envelopes, unknown paths and bodies', () => {
  let h: Harness;
  let t: Tenant;
  before(async () => {
    h = await createHarness({ options: { dispatchOnAccept: false } });
    t = await h.tenant();
  });
  after(() => h.close());

  it('answers 404 "Not found" in form A for an unknown path, without a key', async () => {
    const res = await h.api.get('/api/v1/nothing/here');
    expect(res.status).to.equal(404);
    expect(res.body).to.deep.equal({ error: 'Not found' });
    expect(res.headers['content-type']).to.equal('application/json; charset=utf-8');
  });

  it('answers 404 "Not found" for an unsupported method on a known path, OPTIONS included, in the family\'s form', async () => {
    const res = await h.api.delete('/api/v1/requests/req_01JD0000000000000000000000');
    expect(res.status).to.equal(404);
    expect(res.body).to.deep.equal({ error: 'Not found' });
    // Express would answer OPTIONS itself: 200, the path's methods in plain text.
    for (const [path, body] of [
      ['/api/v1/scribes/atlas/requests', { error: 'Not found' }],
      ['/api/v1/tasks/01935f00-0000-7000-8000-000000000000/events', { error: 'Not found' }],
      ['/api/v1/entries/x', { data: null, meta: {}, error: 'Not found' }],
      ['/inbound/some-token', { error: 'Not found' }],
    ] as const) {
      const options = await h.api.options(path).set(t.headers);
      expect([options.status, options.headers['content-type'], options.headers.allow, options.body], path).to.deep.equal([404, 'application/json; charset=utf-8', undefined, body]);
    }
  });

  it('answers 404 "Not found" in form B under the entries family', async () => {
    for (const path of ['/api/v1/entries', '/api/v1/entry_types/x/nope', '/api/v1/entries/a/b/c']) {
      const res = await h.api.get(path);
      expect(res.status, path).to.equal(404);
      expect(res.body).to.deep.equal({ data: null, meta: {}, error: 'Not found' });
    }
  });

  it('answers 404 "Not found" for a path with malformed percent-encoding, in the family\'s form', async () => {
    for (const path of ['/api/v1/requests/%E0%A4%A', '/api/v1/scribes/%/requests']) {
      const res = await h.api.get(path);
      expect(res.status, path).to.equal(404);
      expect(res.body).to.deep.equal({ error: 'Not found' });
    }
    const entries = await h.api.get('/api/v1/entries/%ZZ').set(t.headers);
    expect(entries.status).to.equal(404);
    expect(entries.body).to.deep.equal({ data: null, meta: {}, error: 'Not found' });
  });

  it('answers 400 "Invalid JSON body" for a malformed body', async () => {
    const res = await h.api.post('/api/v1/scribes/atlas/requests').set(t.headers).set('Content-Type', 'application/json').send('{"task":');
    expect(res.status).to.equal(400);
    expect(res.body).to.deep.equal({ error: 'Invalid JSON body' });
    expect(await h.db('requests').count({ n: '*' }).first()).to.deep.equal({ n: 0 });
  });

  it('answers 413 "Request body too large" above 1 MiB', async () => {
    const summary = 'x'.repeat(1024 * 1024);
    const res = await h.api.post('/api/v1/scribes/atlas/requests').set(t.headers).send({ task: { summary } });
    expect(res.status).to.equal(413);
    expect(res.body).to.deep.equal({ error: 'Request body too large' });
  });

  it('accepts a body just under 1 MiB', async () => {
    const summary = 'x'.repeat(1024 * 1024 - 100);
    const res = await h.api.post('/api/v1/scribes/atlas/requests').set(t.headers).send({ task: { summary } });
    expect(res.status).to.equal(202);
  });

  it('ranks 404 above a malformed body', async () => {
    const res = await h.api.post('/api/v1/scribes/ghost/requests').set(t.headers).set('Content-Type', 'application/json').send('nope');
    expect(res.status).to.equal(404);
    expect(res.body).to.deep.equal({ error: 'Scribe not found' });
  });

  it('reads a JSON body sent without a Content-Type', async () => {
    const res = await h.api.post('/api/v1/scribes/atlas/requests').set(t.headers).set('Content-Type', '').send('{"task":{"summary":"no header"}}');
    expect(res.status).to.equal(202);
  });

  it("returns the caller's X-Request-Id, or a new one", async () => {
    const given = await h.api.get('/api/v1/requests/x').set('X-Request-Id', 'trace-123');
    expect(given.headers['x-request-id']).to.equal('trace-123');
    const insane = await h.api.get('/api/v1/requests/x').set('X-Request-Id', 'bad id with spaces');
    expect(insane.headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);
    const none = await h.api.get('/healthz');
    expect(none.headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);
  });

  it('answers 500 "Internal server error" without details when something breaks', async () => {
    const tenant = await h.tenant({ slug: 'breaks' });
    const undoFault = await failInsertsWhen(h.db, { table: 'requests', column: 'summary', value: 'explode', message: 'secret detail' });
    try {
      const res = await h.api
        .post('/api/v1/scribes/breaks/requests')
        .set(tenant.headers)
        .send({ task: { summary: 'explode' } });
      expect(res.status).to.equal(500);
      expect(res.body).to.deep.equal({ error: 'Internal server error' });
    } finally {
      await undoFault();
    }
  });
});
