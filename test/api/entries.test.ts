import { expect } from 'chai';
import { createHarness, testClock, type Harness, type Tenant } from '../helpers/harness.js';
import { entriesFixture } from '../helpers/entries-fixture.js';
import { encodeCursor } from '../../src/http/cursor.js';

const formB = (error: string) => ({ data: null, meta: {}, error });

describe('GET /api/v1/entries/:id', () => {
  let h: Harness;
  let t: Tenant;
  let fx: Awaited<ReturnType<typeof entriesFixture>>;
  before(async () => {
    h = await createHarness({ env: { READ_THREADS: '2' }, options: { dispatchOnAccept: false } });
    t = await h.tenant();
    fx = await entriesFixture(h, t);
  });
  after(() => h.close());

  it('answers 200 with the entry in the form B envelope', async () => {
    const acme = await fx.company({ Name: 'Acme', City: 'Zurich', Employees: 120, Public: true, Founded: '1999-04-01' });
    const res = await h.api.get(`/api/v1/entries/${acme.id}`).set(t.headers);
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({
      data: {
        id: acme.id,
        entry_type_id: fx.companies.id,
        fields: { Name: 'Acme', City: 'Zurich', Employees: 120, Public: true, Founded: '1999-04-01' },
        draft: false,
        archived: false,
        created_at: acme.created_at,
        updated_at: acme.updated_at,
      },
      meta: {},
      error: null,
    });
  });

  it('returns relationships as arrays of entry ids', async () => {
    const acme = await fx.company({ Name: 'Acme Rel' });
    const ada = await fx.contact({ Name: 'Ada', Company: [acme.id], 'job title': 'CTO' });
    const res = await h.api.get(`/api/v1/entries/${ada.id}`).set(t.headers);
    expect(res.body.data.fields).to.deep.equal({ Name: 'Ada', 'Job Title': 'CTO', Company: [acme.id] });
  });

  it('returns draft and archived entries by id', async () => {
    const draft = await fx.company({ Name: 'Draft Co' }, { draft: true });
    const archived = await fx.company({ Name: 'Old Co' }, { archived: true });
    expect((await h.api.get(`/api/v1/entries/${draft.id}`).set(t.headers)).body.data).to.include({ draft: true, archived: false });
    expect((await h.api.get(`/api/v1/entries/${archived.id}`).set(t.headers)).body.data).to.include({ draft: false, archived: true });
  });

  it('answers 404 "Entry not found" in form B for an unknown id', async () => {
    for (const id of ['01900000-0000-7000-8000-000000000000', 'not-a-uuid']) {
      const res = await h.api.get(`/api/v1/entries/${id}`).set(t.headers);
      expect(res.status, id).to.equal(404);
      expect(res.body).to.deep.equal(formB('Entry not found'));
    }
  });

  it("answers 404 for another organization's entry", async () => {
    const other = await h.tenant({ slug: 'other' });
    const theirs = await entriesFixture(h, other);
    const entry = await theirs.company({ Name: 'Theirs' });
    const res = await h.api.get(`/api/v1/entries/${entry.id}`).set(t.headers);
    expect(res.status).to.equal(404);
    expect(res.body).to.deep.equal(formB('Entry not found'));
  });

  it('answers 401 "Unauthorized" in form B without a valid key', async () => {
    const entry = await fx.company({ Name: 'Secret' });
    for (const headers of [{}, { 'X-Api-Key': '' }, { 'X-Api-Key': 'sk_wrong' }]) {
      const res = await h.api.get(`/api/v1/entries/${entry.id}`).set(headers);
      expect(res.status).to.equal(401);
      expect(res.body).to.deep.equal(formB('Unauthorized'));
    }
    const list = await h.api.get(`/api/v1/entry_types/${fx.companies.id}/entries`);
    expect(list.status).to.equal(401);
    expect(list.body).to.deep.equal(formB('Unauthorized'));
  });
});

describe('GET /api/v1/entry_types/:entry_type_id/entries', () => {
  let h: Harness;
  const clock = testClock();
  before(async () => {
    h = await createHarness({ env: { READ_THREADS: '2' }, options: { dispatchOnAccept: false, clock } });
  });
  after(() => h.close());

  async function setup(n: number) {
    const t = await h.tenant();
    const fx = await entriesFixture(h, t);
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      if (i % 3 === 0) clock.advance(1); // runs of three share a created_at
      ids.push((await fx.company({ Name: `Company ${i}`, Employees: i })).id);
    }
    const url = (query = '') => `/api/v1/entry_types/${fx.companies.id}/entries${query}`;
    return { t, fx, ids, url };
  }

  async function walk(t: Tenant, url: (q?: string) => string, query: string, between?: () => Promise<void>) {
    const ids: string[] = [];
    let cursor: string | null = null;
    for (;;) {
      const after: string = cursor ? `&after=${encodeURIComponent(cursor)}` : '';
      const res = await h.api.get(url(`?${query}${after}`)).set(t.headers);
      expect(res.status, res.text).to.equal(200);
      expect(res.body.error).to.equal(null);
      ids.push(...res.body.data.map((e: { id: string }) => e.id));
      cursor = res.body.meta.next_cursor;
      if (!cursor) return ids;
      await between?.();
    }
  }

  it('answers the form B envelope with next_cursor and the limit applied in meta', async () => {
    const { t, ids, url } = await setup(3);
    const res = await h.api.get(url('?limit=2')).set(t.headers);
    expect(res.status).to.equal(200);
    expect(res.headers['content-type']).to.equal('application/json; charset=utf-8');
    expect(Object.keys(res.body)).to.deep.equal(['data', 'meta', 'error']);
    // The page is built as text; it must be what the single-entry endpoint serves, entry by entry.
    const one = await h.api.get(`/api/v1/entries/${ids[0]}`).set(t.headers);
    expect(res.body.data[0]).to.deep.equal(one.body.data);
    expect(res.body.data.map((e: { id: string }) => e.id)).to.deep.equal(ids.slice(0, 2));
    expect(res.body.meta).to.have.keys(['next_cursor', 'limit']);
    expect(res.body.meta.limit).to.equal(2);
    expect(res.body.meta.next_cursor)
      .to.be.a('string')
      .and.match(/^[A-Za-z0-9_-]+$/);
  });

  it('walks every entry exactly once, oldest first, at several limits', async () => {
    const { t, ids, url } = await setup(31);
    for (const limit of [1, 2, 7, 30, 31, 1000]) {
      expect(await walk(t, url, `limit=${limit}`), `limit ${limit}`).to.deep.equal(ids);
    }
  });

  it('never skips or repeats an entry while entries are added between pages', async () => {
    const { t, fx, ids, url } = await setup(10);
    const added: string[] = [];
    const seen = await walk(t, url, 'limit=3', async () => {
      clock.advance(1);
      added.push((await fx.company({ Name: `Late ${added.length}` })).id);
    });
    expect(seen).to.deep.equal([...ids, ...added]);
  });

  it('gives next_cursor null on a full last page', async () => {
    const { t, url } = await setup(4);
    const res = await h.api.get(url('?limit=4')).set(t.headers);
    expect(res.body.data).to.have.length(4);
    expect(res.body.meta.next_cursor).to.equal(null);
  });

  it('defaults to 100 per page and clamps limits above 1000 to 1000', async () => {
    const { t, url } = await setup(101);
    const first = await h.api.get(url()).set(t.headers);
    expect(first.body.data).to.have.length(100);
    expect(first.body.meta.limit).to.equal(100);
    const clamped = await h.api.get(url('?limit=5000')).set(t.headers);
    expect(clamped.body.meta.limit).to.equal(1000);
    expect(clamped.body.data).to.have.length(101);
  });

  it('leaves out drafts and archived entries unless asked', async () => {
    const { t, fx, ids, url } = await setup(2);
    const draft = (await fx.company({ Name: 'Draft' }, { draft: true })).id;
    const archived = (await fx.company({ Name: 'Archived' }, { archived: true })).id;
    const both = (await fx.company({ Name: 'Both' }, { draft: true, archived: true })).id;
    const list = async (query: string) => (await h.api.get(url(query)).set(t.headers)).body.data.map((e: { id: string }) => e.id);
    expect(await list('')).to.deep.equal(ids);
    expect(await list('?include_drafts=false&include_archived=0')).to.deep.equal(ids);
    expect(await list('?include_drafts=true')).to.deep.equal([...ids, draft]);
    expect(await list('?include_archived=1')).to.deep.equal([...ids, archived]);
    expect(await list('?include_drafts=1&include_archived=true')).to.deep.equal([...ids, draft, archived, both]);
  });

  it('answers 400 for bad parameters', async () => {
    const { t, url } = await setup(1);
    const cases: Array<[string, string]> = [
      ['?limit=0', 'Invalid limit'],
      ['?limit=abc', 'Invalid limit'],
      ['?limit=1.5', 'Invalid limit'],
      ['?include_drafts=yes', 'Invalid include_drafts'],
      ['?include_archived=', 'Invalid include_archived'],
      ['?after=%%%', 'Invalid cursor format'],
      [`?after=${encodeCursor({ createdAt: '2026-11-21T09:00:00.000Z', id: 'req_01JD0000000000000000000000' })}`, 'Invalid cursor format'],
      [`?after=${Buffer.from('[1,2]').toString('base64url')}`, 'Invalid cursor format'],
      ['?q=a&q=b', 'Invalid search query: q is given more than once'],
    ];
    for (const [query, error] of cases) {
      const res = await h.api.get(url(query)).set(t.headers);
      expect(res.status, query).to.equal(400);
      expect(res.body, query).to.deep.equal(formB(error));
    }
  });

  it('answers 404 "Entry type not found" before checking parameters', async () => {
    const { t } = await setup(0);
    for (const id of ['01900000-0000-7000-8000-000000000000', 'nope']) {
      const res = await h.api.get(`/api/v1/entry_types/${id}/entries?limit=0`).set(t.headers);
      expect(res.status).to.equal(404);
      expect(res.body).to.deep.equal(formB('Entry type not found'));
    }
  });

  it("answers 404 for another organization's entry type", async () => {
    const { url } = await setup(1);
    const stranger = await h.tenant({ slug: 'stranger' });
    const res = await h.api.get(url()).set(stranger.headers);
    expect(res.status).to.equal(404);
    expect(res.body).to.deep.equal(formB('Entry type not found'));
  });
});
