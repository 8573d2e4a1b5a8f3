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
  let globexId: string;
  let theirs: { receipt: string; session: string; entry: string };

  before(async () => {
    // Entry reads in the server's thread: starting read threads costs seconds, and they have tests of their own (test/entries/read-workers.test.ts).
    h = await createHarness({ env: { READ_THREADS: '0' }, options: { runOnNewWork: false, dispatchOnAccept: false } });
    t = await h.tenant({ slug: 'atlas' });
    other = await h.tenant({ slug: 'hermes' });
    admin = await signIn(h, t, 'admin');
    const submit = async (tenant: Tenant, title: string) =>
      (
        await h.api
          .post(`/api/v1/scribes/${tenant.scribe.slug}/requests`)
          .set(tenant.headers)
          .send({ task: { title, summary: title } })
      ).body.request.id as string;
    receiptId = await submit(t, 'Quarterly report for ACME Corp');
    await submit(t, 'Invoice 100% paid_in_full');
    await h.services.dispatcher.tick();
    taskId = (await h.db('tasks').where({ request_id: receiptId }).first('id')).id;
    await submit(t, 'Still waiting: acme follow-up');
    sessionId = (await h.api.post('/api/v1/scribes/atlas/chat').set(t.headers).send({ message: 'hello' })).body.session_id;
    await say(sessionId, 'scribe', 'Hi! The <b>Zanzibar</b> shipment left on Monday, as planned with the port authority and the insurers.');
    await say(sessionId, 'system', 'Session failed: Kilimanjaro timed out');
    await say((await h.api.post('/api/v1/scribes/atlas/chat').set(t.headers).send({ message: 'Pay 100% in_full today' })).body.session_id, 'user', 'ok');
    const companies = {
      name: 'Companies',
      fields: [
        { name: 'Name', type: 'text', primary: true },
        { name: 'Notes', type: 'text' },
      ],
    };
    const type = await h.services.entryTypes.create(t.organizationId, companies);
    entryId = (await h.services.entries.create(t.organizationId, type.id, { fields: { Name: 'Acme' } })).id;
    globexId = (await h.services.entries.create(t.organizationId, type.id, { fields: { Name: 'Globex', Notes: 'Rival of Acme; tax 100% due_now' } })).id;
    await h.services.entries.create(t.organizationId, type.id, { fields: { Name: 'Tax 100% due_now' }, draft: true });
    const theirType = await h.services.entryTypes.create(other.organizationId, companies);
    theirs = {
      receipt: await submit(other, 'Their ACME secret plan'),
      session: (await h.api.post('/api/v1/scribes/hermes/chat').set(other.headers).send({ message: 'hi, about Zanzibar and acme' })).body.session_id,
      entry: (await h.services.entries.create(other.organizationId, theirType.id, { fields: { Name: 'Acme Zanzibar secret' } })).id,
    };
  });
  after(() => h.close());

  const find = (q: string) => admin.get(`/search?q=${encodeURIComponent(q)}`);
  /** Adds a message to a session's transcript, as its author wrote it. */
  async function say(session: string, author: string, text: string) {
    await h.db('session_messages').insert({ session_id: session, author, text, created_at: new Date().toISOString() });
  }
  /** The part of a results page under a heading, up to the next one. */
  const section = (html: string, heading: string) => {
    const start = html.indexOf(heading);
    return start < 0 ? '' : html.slice(start, html.indexOf('<h2>', start + 1) < 0 ? undefined : html.indexOf('<h2>', start + 1));
  };
  const linked = (html: string, path: string) => [...html.matchAll(new RegExp(`href="/${path}/([0-9a-f-]{36})"`, 'g'))].map((m) => m[1]);

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
    for (const q of ['acme', 'zanzibar', 'secret']) {
      const res = await find(q);
      expect(res.text, q).to.not.include(theirs.entry).and.not.include(theirs.session).and.not.include('Acme Zanzibar secret').and.not.include('hi, about Zanzibar');
    }
  });

  it('lists entries whose primary field contains the text, in any case, by type, and not those that hold it in another field', async () => {
    const res = await find('ACM');
    expect(res.status).to.equal(200);
    const entries = section(res.text, 'Entries whose primary field contains “ACM”');
    expect(entries).to.include('<a href="/entry-types/').and.include('Companies</a> <span class="hint">by Name</span>');
    expect(linked(entries, 'entries')).to.deep.equal([entryId]);
    expect(res.text).to.not.include(globexId);
    // Drafts and archived entries are found too, marked as such; a text of two characters too.
    const draft = section((await find('0%')).text, 'Entries whose');
    expect(draft).to.include('Tax 100% due_now</a> <span class="badge badge-idle">draft</span>');
  });

  it('lists sessions with a message of the user, staff or scribe that contains the text, titled by the first message, the match in an escaped snippet', async () => {
    const res = await find('zanzibar');
    const sessions = section(res.text, 'Sessions with a message containing “zanzibar”');
    expect(linked(sessions, 'sessions')).to.deep.equal([sessionId]);
    expect(sessions).to.include(`<a href="/sessions/${sessionId}">hello</a>`);
    expect(sessions).to.include('<p class="snippet">Hi! The &lt;b&gt;<mark>Zanzibar</mark>&lt;/b&gt; shipment left on Monday, as planned with the port…</p>');
    expect(sessions).to.not.include('<b>');
    expect(res.text).to.include('Sessions: searched the messages of the latest 2,000.');
    // The system's notes are not the conversation.
    expect((await find('kilimanjaro')).text).to.include('No matches.');
  });

  it('lists receipts and tasks whose title contains the text, in any case, and scribes by name', async () => {
    const res = await find('acme');
    expect(res.status).to.equal(200);
    expect(res.text).to.include('Receipts whose title contains “acme”').and.include('Tasks whose title contains “acme”');
    const receipts = res.text.slice(res.text.indexOf('Receipts whose'), res.text.indexOf('Tasks whose'));
    expect([...receipts.matchAll(/href="\/receipts\/(req_[^"]+)"/g)].map((m) => m[1]))
      .to.have.length(2)
      .and.include(receiptId);
    expect(res.text.slice(res.text.indexOf('Tasks whose'))).to.include(`/tasks/${taskId}`);
    const scribes = await find('atl');
    expect(scribes.text).to.include('<a href="/b/atlas">atlas</a>');
  });

  it('matches % and _ as themselves, not as wildcards', async () => {
    const percent = await find('100%');
    expect(percent.text).to.include('Invoice 100% paid_in_full');
    expect(section(percent.text, 'Entries whose')).to.include('Tax 100% due_now</a>');
    expect(section(percent.text, 'Sessions with')).to.include('Pay 100% in_full today');
    expect((await find('0%p')).text).to.include('No matches.');
    expect((await find('d_i')).text).to.include('Invoice 100% paid_in_full');
    expect(section((await find('e_n')).text, 'Entries whose')).to.include('Tax 100% due_now</a>');
    expect(section((await find('n_f')).text, 'Sessions with')).to.include('<mark>n_f</mark>');
    for (const q of ['x_y', '0%d', 'e%w', '1_0', 'y_1', 'n%l']) expect((await find(q)).text, q).to.include('No matches.');
  });

  it("links to the rest when there are more than ten: the type's list searched by its primary field, the sessions list searched", async () => {
    const type = await h.services.entryTypes.create(t.organizationId, { name: 'Contacts', fields: [{ name: 'Full name', type: 'text', primary: true }] });
    const people: string[] = [];
    for (let i = 0; i < 11; i++)
      people.push((await h.services.entries.create(t.organizationId, type.id, { fields: { 'Full name': `Quokka Person ${i}` }, archived: i === 10 })).id);
    for (let i = 0; i < 11; i++)
      await h.api
        .post('/api/v1/scribes/atlas/chat')
        .set(t.headers)
        .send({ message: `Quokka question ${i}` });
    const res = await find('quokka');
    const entries = section(res.text, 'Entries whose');
    expect(linked(entries, 'entries')).to.deep.equal(people.slice(0, 10));
    const all = `/entry-types/${type.id}?q=%22Full+name%22%3A%22quokka%22&amp;drafts=1&amp;archived=1`;
    expect(entries).to.include(`<a href="${all}">All matching Contacts entries →</a>`);
    expect(linked((await admin.get(all.replaceAll('&amp;', '&'))).text, 'entries')).to.deep.equal(people);
    const sessions = section(res.text, 'Sessions with');
    expect(linked(sessions, 'sessions')).to.have.length(10);
    expect(sessions).to.include('<a href="/sessions?q=quokka">All matching sessions →</a>');
    expect(linked((await admin.get('/sessions?q=quokka')).text, 'sessions')).to.have.length(11);
    // The list's search language cannot quote a double quote: the rest is said, not linked.
    for (let i = 0; i < 11; i++) await h.services.entries.create(t.organizationId, type.id, { fields: { 'Full name': `The "Wombat" ${i}` } });
    const quoted = section((await find('"wombat"')).text, 'Entries whose');
    expect(linked(quoted, 'entries')).to.have.length(10);
    expect(quoted).to.include('<p class="hint">More Contacts entries match.</p>').and.not.include('All matching');
  });

  it('says what it looked for when nothing matches; an empty search shows how to search; more than 200 characters is refused (400)', async () => {
    const none = await find('zebra');
    expect(none.text).to.include(
      'Nothing has the id or slug &#34;zebra&#34;, and no receipt or task title, scribe name, entry&#39;s primary field or session message contains it.',
    );
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
