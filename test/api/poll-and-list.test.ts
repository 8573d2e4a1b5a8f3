import { expect } from 'chai';
import { createHarness, testClock, type Harness, type Tenant } from '../helpers/harness.js';
import { encodeCursor } from '../../src/http/cursor.js';

describe('GET /api/v1/requests/:id', () => {
  let h: Harness;
  let t: Tenant;
  before(async () => {
    h = await createHarness({ options: { dispatchOnAccept: false } });
    t = await h.tenant();
  });
  after(() => h.close());

  it('answers 200 with the receipt as submitted', async () => {
    const submitted = await h.api
      .post('/api/v1/scribes/atlas/requests')
      .set(t.headers)
      .send({ task: { summary: 'x' } });
    const res = await h.api.get(`/api/v1/requests/${submitted.body.request.id}`).set(t.headers);
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal(submitted.body);
  });

  it('shows entity_id once fulfilled and error_message once failed', async () => {
    const ok = await h.api
      .post('/api/v1/scribes/atlas/requests')
      .set(t.headers)
      .send({ task: { summary: 'x' } });
    await h.services.dispatcher.tick();
    const fulfilled = await h.api.get(`/api/v1/requests/${ok.body.request.id}`).set(t.headers);
    expect(fulfilled.body.request.status).to.equal('fulfilled');
    const task = await h.db('tasks').where({ request_id: ok.body.request.id }).first();
    expect(fulfilled.body.request.entity_id).to.equal(task.id);
    expect(fulfilled.body.request.error_message).to.equal(null);

    const doomed = await h.api
      .post('/api/v1/scribes/atlas/requests')
      .set(t.headers)
      .send({ task: { summary: 'y' } });
    await h.services.scribes.setState(t.organizationId, 'atlas', 'powered_off');
    await h.services.dispatcher.tick();
    await h.services.scribes.setState(t.organizationId, 'atlas', 'active');
    const failed = await h.api.get(`/api/v1/requests/${doomed.body.request.id}`).set(t.headers);
    expect(failed.body.request).to.include({ status: 'failed', entity_id: null, error_message: 'Scribe is not active' });
  });

  it('answers 404 "Request not found" for an unknown id', async () => {
    for (const id of ['req_01JD0000000000000000000000', 'nonsense', 'req_']) {
      const res = await h.api.get(`/api/v1/requests/${id}`).set(t.headers);
      expect(res.status, id).to.equal(404);
      expect(res.body).to.deep.equal({ error: 'Request not found' });
    }
  });

  it("answers 404 for another organization's receipt", async () => {
    const other = await h.tenant({ slug: 'other' });
    const theirs = await h.api
      .post('/api/v1/scribes/other/requests')
      .set(other.headers)
      .send({ task: { summary: 'x' } });
    const res = await h.api.get(`/api/v1/requests/${theirs.body.request.id}`).set(t.headers);
    expect(res.status).to.equal(404);
    expect(res.body).to.deep.equal({ error: 'Request not found' });
  });
});

describe('GET /api/v1/scribes/:scribe_id/requests', () => {
  let h: Harness;
  const clock = testClock();
  before(async () => {
    h = await createHarness({ options: { dispatchOnAccept: false, clock } });
  });
  after(() => h.close());

  /** Submits `n` receipts, some sharing a millisecond, and returns their ids oldest first. */
  async function seedReceipts(t: Tenant, n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      if (i % 3 === 0) clock.advance(1); // runs of three share a created_at
      const res = await h.api
        .post(`/api/v1/scribes/${t.scribe.slug}/requests`)
        .set(t.headers)
        .send({ task: { summary: `task ${i}` } });
      ids.push(res.body.request.id);
    }
    return ids;
  }

  async function walk(t: Tenant, query: string): Promise<{ ids: string[]; pages: number[] }> {
    const ids: string[] = [];
    const pages: number[] = [];
    let cursor: string | null = null;
    do {
      const after: string = cursor ? `&after=${encodeURIComponent(cursor)}` : '';
      const res = await h.api.get(`/api/v1/scribes/${t.scribe.slug}/requests?${query}${after}`).set(t.headers);
      expect(res.status).to.equal(200);
      expect(Object.keys(res.body).sort()).to.deep.equal(['next_cursor', 'requests']);
      ids.push(...res.body.requests.map((r: { id: string }) => r.id));
      pages.push(res.body.requests.length);
      cursor = res.body.next_cursor;
    } while (cursor);
    return { ids, pages };
  }

  it('pages through every receipt exactly once, newest first, at several limits', async () => {
    const t = await h.tenant();
    const ids = await seedReceipts(t, 23);
    const newestFirst = [...ids].reverse();
    for (const limit of [1, 5, 10, 23, 100]) {
      const { ids: seen, pages } = await walk(t, `limit=${limit}`);
      expect(seen, `limit ${limit}`).to.deep.equal(newestFirst);
      expect(
        pages.slice(0, -1).every((n) => n === limit),
        `full pages at limit ${limit}`,
      ).to.equal(true);
    }
  });

  it('gives next_cursor null on a full last page', async () => {
    const t = await h.tenant();
    await seedReceipts(t, 4);
    const res = await h.api.get('/api/v1/scribes/atlas/requests?limit=4').set(t.headers);
    expect(res.body.requests).to.have.length(4);
    expect(res.body.next_cursor).to.equal(null);
  });

  it('defaults to 25 per page and clamps limits above 100 to 100', async () => {
    const t = await h.tenant();
    await seedReceipts(t, 102);
    const first = await h.api.get('/api/v1/scribes/atlas/requests').set(t.headers);
    expect(first.body.requests).to.have.length(25);
    expect(first.body.next_cursor).to.be.a('string');
    const clamped = await h.api.get('/api/v1/scribes/atlas/requests?limit=1000').set(t.headers);
    expect(clamped.status).to.equal(200);
    expect(clamped.body.requests).to.have.length(100);
  });

  it('filters by status and entity_type', async () => {
    const t = await h.tenant();
    const ids = await seedReceipts(t, 5);
    await h.services.dispatcher.tick();
    const newer = await seedReceipts(t, 2);
    const accepted = await walk(t, 'status=accepted&limit=1');
    expect(accepted.ids).to.deep.equal([...newer].reverse());
    const fulfilled = await walk(t, 'status=fulfilled&entity_type=task&limit=2');
    expect(fulfilled.ids).to.deep.equal([...ids].reverse());
    const none = await walk(t, 'status=failed');
    expect(none.ids).to.deep.equal([]);
  });

  it('answers 400 for a bad status, entity_type or limit', async () => {
    const t = await h.tenant();
    const cases: Array<[string, string]> = [
      ['status=done', 'Invalid status'],
      ['status=accepted&status=failed', 'Invalid status'],
      ['entity_type=session', 'Invalid entity_type'],
      ['limit=0', 'Invalid limit'],
      ['limit=-1', 'Invalid limit'],
      ['limit=2.5', 'Invalid limit'],
      ['limit=ten', 'Invalid limit'],
      ['limit=', 'Invalid limit'],
    ];
    for (const [query, error] of cases) {
      const res = await h.api.get(`/api/v1/scribes/atlas/requests?${query}`).set(t.headers);
      expect(res.status, query).to.equal(400);
      expect(res.body, query).to.deep.equal({ error });
    }
  });

  it('answers 400 "Invalid cursor format" for a malformed cursor', async () => {
    const t = await h.tenant();
    const bad = [
      'garbage!',
      Buffer.from('not json').toString('base64url'),
      Buffer.from('{"a":1}').toString('base64url'),
      Buffer.from('["2026-01-01", "req_01JD0000000000000000000000"]').toString('base64url'),
      Buffer.from('["2026-11-21T09:00:00.000Z", "not-an-id"]').toString('base64url'),
      encodeCursor({ createdAt: '2026-13-45T99:00:00.000Z', id: 'req_01JD0000000000000000000000' }),
    ];
    for (const after of bad) {
      const res = await h.api.get(`/api/v1/scribes/atlas/requests?after=${encodeURIComponent(after)}`).set(t.headers);
      expect(res.status, after).to.equal(400);
      expect(res.body).to.deep.equal({ error: 'Invalid cursor format' });
    }
    const twice = await h.api.get('/api/v1/scribes/atlas/requests?after=a&after=b').set(t.headers);
    expect(twice.status).to.equal(400);
    expect(twice.body).to.deep.equal({ error: 'Invalid cursor format' });
  });

  it('answers 404 "Scribe not found" for an unknown scribe, before checking the query', async () => {
    const t = await h.tenant();
    const res = await h.api.get('/api/v1/scribes/ghost/requests?limit=0').set(t.headers);
    expect(res.status).to.equal(404);
    expect(res.body).to.deep.equal({ error: 'Scribe not found' });
  });

  it("never lists another organization's receipts, even for the same slug", async () => {
    const mine = await h.tenant({ slug: 'shared-name' });
    const theirs = await h.tenant({ slug: 'shared-name' });
    await seedReceipts(theirs, 3);
    const res = await h.api.get('/api/v1/scribes/shared-name/requests').set(mine.headers);
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ requests: [], next_cursor: null });
  });
});
