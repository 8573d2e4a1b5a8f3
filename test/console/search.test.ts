import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { signIn, type ConsoleClient } from '../helpers/console.js';

/** The header's search box: ids and slugs go to their page; other text lists what contains it. */
describe('console: find anything', () => {
  let h: Harness;
  let t: Tenant;
  let other: Tenant;
  let admin: ConsoleClient;
  let receiptId: string;
  let taskId: string;
  let sessionId: string;
  let entryId: string;
  let theirs: { receipt: string; session: string };

  before(async () => {
    h = await createHarness({ options: { runOnNewWork: false, dispatchOnAccept: false } });
    t = await h.tenant({ slug: 'atlas' });
    other = await h.tenant({ slug: 'hermes' });
    admin = await signIn(h, t, 'admin');
    const submit = async (tenant: Tenant, title: string) => (await h.api.post(`/api/v1/scribes/${tenant.scribe.slug}/requests`).set(tenant.headers).send({ task: { title, summary: title } })).body.request.id as string;
    receiptId = await submit(t, 'Quarterly report for ACME Corp');
    await submit(t, 'Invoice 100% paid_in_full');
    await h.services.dispatcher.tick();
    taskId = (await h.db('tasks').where({ request_id: receiptId }).first('id')).id;
    await submit(t, 'Still waiting: acme follow-up');
    sessionId = (await h.api.post('/api/v1/scribes/atlas/chat').set(t.headers).send({ message: 'hello' })).body.session_id;
    const type = await h.services.entryTypes.create(t.organizationId, { name: 'Companies', fields: [{ name: 'Name', type: 'text', primary: true }] });
    entryId = (await h.services.entries.create(t.organizationId, type.id, { fields: { Name: 'Acme' } })).id;
    theirs = {
      receipt: await submit(other, 'Their ACME secret plan'),
      session: (await h.api.post('/api/v1/scribes/hermes/chat').set(other.headers).send({ message: 'hi' })).body.session_id,
    };
  });
  after(() => h.close());

  const find = (q: string) => admin.get(`/search?q=${encodeURIComponent(q)}`);

  it('has a search box in the header of every page', async () => {
    const page = await admin.get('/receipts');
    expect(page.text).to.include('<form class="find" method="get" action="/search" role="search">').and.include('<input id="find" type="search" name="q"');
  });

  it('goes straight to the page of a receipt, task, session or entry id, and of a scribe slug (any case, spaces trimmed)', async () => {
    for (const [q, page] of [
      [receiptId, `/receipts/${receiptId}`],
      [`  ${receiptId} `, `/receipts/${receiptId}`],
      [taskId, `/tasks/${taskId}`],
      [taskId.toUpperCase(), `/tasks/${taskId}`],
      [sessionId, `/sessions/${sessionId}`],
      [entryId, `/entries/${entryId}`],
      ['atlas', '/b/atlas'],
      ['ATLAS', '/b/atlas'],
    ]) {
      const res = await find(q!);
      expect(res.status, q).to.equal(303);
      expect(res.headers.location, q).to.equal(page);
    }
  });

  it("never goes to another organization's records: their ids and slugs find nothing", async () => {
    for (const q of [theirs.receipt, theirs.session, 'hermes']) {
      const res = await find(q);
      expect(res.status, q).to.equal(200);
      expect(res.text).to.include('No matches.');
    }
    const text = await find('acme');
    expect(text.text).to.not.include('Their ACME secret plan').and.not.include(theirs.receipt);
  });

  it('lists receipts and tasks whose title contains the text, in any case, and scribes by name', async () => {
    const res = await find('acme');
    expect(res.status).to.equal(200);
    expect(res.text).to.include('Receipts whose title contains “acme”').and.include('Tasks whose title contains “acme”');
    const receipts = res.text.slice(res.text.indexOf('Receipts whose'), res.text.indexOf('Tasks whose'));
    expect([...receipts.matchAll(/href="\/receipts\/(req_[^"]+)"/g)].map((m) => m[1])).to.have.length(2).and.include(receiptId);
    expect(res.text.slice(res.text.indexOf('Tasks whose'))).to.include(`/tasks/${taskId}`);
    const scribes = await find('atl');
    expect(scribes.text).to.include('<a href="/b/atlas">atlas</a>');
  });

  it('matches % and _ as themselves, not as wildcards', async () => {
    expect((await find('100%')).text).to.include('Invoice 100% paid_in_full');
    expect((await find('0%p')).text).to.include('No matches.');
    expect((await find('d_i')).text).to.include('Invoice 100% paid_in_full');
    expect((await find('x_y')).text).to.include('No matches.');
  });

  it('says what it looked for when nothing matches; an empty search shows how to search; more than 200 characters is refused (400)', async () => {
    const none = await find('zebra');
    expect(none.text).to.include('Nothing has the id or slug &#34;zebra&#34;, and no receipt, task or scribe has it in its title or name.');
    const empty = await admin.get('/search');
    expect(empty.status).to.equal(200);
    expect(empty.text).to.include('Paste a receipt id');
    const long = await find('x'.repeat(201));
    expect(long.status).to.equal(400);
    expect(long.text).to.include('Search for at most 200 characters');
  });

  it('filters the receipts and tasks lists by title too (q), keeping the other filters', async () => {
    const receipts = await admin.get('/receipts?q=ACME&scribe=atlas');
    expect(receipts.text).to.include('Quarterly report for ACME Corp').and.include('Still waiting: acme follow-up').and.not.include('Invoice 100%');
    expect(receipts.text).to.include('name="q" value="ACME"');
    const tasks = await admin.get('/tasks?q=quarterly');
    expect(tasks.text).to.include(`/tasks/${taskId}`);
    expect((await admin.get('/tasks?q=follow-up')).text, 'its receipt is not dispatched yet').to.include('No tasks match.');
  });

  it('is for signed-in staff only', async () => {
    const res = await h.api.get('/search?q=atlas');
    expect(res.status).to.equal(303);
    expect(res.headers.location).to.match(/^\/login/);
  });
});
