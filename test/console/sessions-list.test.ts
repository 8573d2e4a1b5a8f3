import { expect } from 'chai';
import { createHarness, testClock, type Harness, type Tenant } from '../helpers/harness.js';
import { signIn, type ConsoleClient } from '../helpers/console.js';
import { newId } from '../../src/lib/ids.js';
import { SESSION_SEARCH_WINDOW } from '../../src/console/queries.js';

const ids = (html: string) => [...html.matchAll(/<td><a href="\/sessions\/([0-9a-f-]{36})">/g)].map((m) => m[1]!);
const linkOf = (html: string, rel: 'first' | 'prev' | 'next') => new RegExp(`href="([^"]+)" rel="${rel}"`).exec(html)?.[1]?.replace(/&amp;/g, '&');
const totalOf = (html: string) => /<span class="pager-total">([^<]+)<\/span>/.exec(html)?.[1];

describe('console: sessions list', () => {
  const clock = testClock('2026-11-24T12:00:00.000Z');
  let h: Harness;
  before(async () => {
    h = await createHarness({ options: { clock, dispatchOnAccept: false, runOnNewWork: false } });
  });
  after(() => h.close());

  let minute = 0;
  const startedAt: Record<string, string> = {};
  /** A session of the tenant's scribe (or `scribeId`) holding `messages` (the first the user's), a minute after the one before. */
  async function session(t: Tenant, messages: string[], options: { state?: string; replyDue?: boolean; error?: string; scribeId?: string } = {}) {
    const at = new Date(Date.parse('2026-11-20T08:00:00.000Z') + minute++ * 60_000).toISOString();
    const id = newId();
    await h.db('sessions').insert({
      id,
      organization_id: t.organizationId,
      scribe_id: options.scribeId ?? t.scribe.id,
      state: options.state ?? 'queued',
      reply_due: options.replyDue ?? true,
      error_message: options.error ?? null,
      attempts: 0,
      created_at: at,
      updated_at: at,
    });
    await h.db('session_messages').insert(messages.map((text, i) => ({ session_id: id, author: i % 2 ? 'scribe' : 'user', text, created_at: at })));
    startedAt[id] = at;
    return id;
  }

  describe('one organization with two scribes', () => {
    let t: Tenant;
    let admin: ConsoleClient;
    const s: Record<string, string> = {};
    let second: { id: string };
    let stranger: string;
    before(async () => {
      t = await h.tenant({ slug: 'atlas' });
      second = await h.services.scribes.create({ organizationId: t.organizationId, slug: 'second', name: 'Second' });
      admin = await signIn(h, t, 'viewer');
      s.queued = await session(t, ['Where is the Acme contract?']);
      s.waiting = await session(t, ['Summarize Globex', 'Globex is a client since 2019.'], { state: 'waiting', replyDue: false });
      s.failed = await session(t, ['Count the invoices'], { state: 'failed', replyDue: false, error: 'Model timed out' });
      s.completed = await session(t, ['Thanks, bye', 'Goodbye!'], { state: 'completed', replyDue: false });
      s.ended = await session(t, ['Note 100% of the ACME renewals'], { state: 'completed', replyDue: true });
      s.second = await session(t, ['A question for the second scribe'], { state: 'waiting', replyDue: false, scribeId: second.id });
      const other = await h.tenant({ slug: 'second' });
      stranger = await session(other, ['Acme secrets of another organization'], { state: 'waiting', replyDue: false });
    });

    it('lists every session of the organization newest first, each with its first message, scribe, state and times', async () => {
      const res = await admin.get('/sessions');
      expect(res.status).to.equal(200);
      expect(ids(res.text)).to.deep.equal([s.second, s.ended, s.completed, s.failed, s.waiting, s.queued]);
      expect(res.text).to.include('<h1>Sessions</h1>');
      expect(res.text).to.include('<li><a href="/sessions" aria-current="page">Sessions</a></li>');
      expect(res.text).to.match(/<li><a href="\/tasks">Tasks<\/a><\/li>\s*<li><a href="\/sessions" aria-current="page">Sessions<\/a><\/li>/);
      expect(res.text).to.include(`<td><a href="/sessions/${s.failed}">Count the invoices</a> <span class="error-text">Model timed out</span></td>`);
      expect(res.text).to.include(`<td><a href="/sessions/${s.second}">A question for the second scribe</a></td>\n              <td><a href="/b/second">second</a></td>`);
      expect(res.text).to.include('<span class="badge badge-bad">failed</span>');
      expect(res.text).to.include('<span class="badge badge-ok">completed</span>\n <span class="hint">owes a reply</span>');
      // Four days old: its date and time (in UTC, as this user has no zone), the exact time in the title.
      const at = startedAt[s.queued!]!;
      expect(res.text).to.include(`<time datetime="${at}" title="${at.slice(0, 10)} ${at.slice(11, 19)} UTC">20 Nov 2026, ${at.slice(11, 16)}</time>`);
      expect(totalOf(res.text)).to.equal('6 sessions in all');
      expect(res.text).not.to.include(stranger).and.not.include('another organization');
    });

    it('filters by state: owing a reply, waiting for the user, failed, completed', async () => {
      const listed = async (state: string) => ids((await admin.get(`/sessions?state=${state}`)).text);
      expect(await listed('reply_due')).to.deep.equal([s.ended, s.queued]);
      expect(await listed('waiting')).to.deep.equal([s.second, s.waiting]);
      expect(await listed('failed')).to.deep.equal([s.failed]);
      expect(await listed('completed')).to.deep.equal([s.ended, s.completed]);
      expect(await listed('queued')).to.deep.equal([s.queued]);
      expect(await listed('running')).to.deep.equal([]);
      const filtered = (await admin.get('/sessions?state=failed')).text;
      expect(totalOf(filtered)).to.equal('1 session matching these filters');
      expect(filtered).to.include('<option value="failed" selected>failed</option>');
      // A state no session can be in is no filter.
      expect(await listed('sleeping')).to.have.length(6);
      expect((await admin.get('/sessions?state=running')).text).to.include('No sessions match.');
    });

    it("lists one scribe's sessions at /sessions?scribe= and /b/<slug>/sessions", async () => {
      const res = await admin.get('/sessions?scribe=second');
      expect(ids(res.text)).to.deep.equal([s.second]);
      expect(res.text).to.include('<h1>Sessions of Second</h1>');
      expect(res.text).to.include('<a href="/b/second">Second</a>');
      const moved = await admin.get('/b/second/sessions');
      expect(moved.status).to.equal(303);
      expect(moved.headers.location).to.equal('/sessions?scribe=second');
      expect(ids((await admin.get('/sessions?scribe=atlas&state=reply_due')).text)).to.deep.equal([s.ended, s.queued]);
    });

    it('searches the text of every message, in any case, with % and _ taken literally', async () => {
      const found = async (q: string, more = '') => ids((await admin.get(`/sessions?q=${encodeURIComponent(q)}${more}`)).text);
      expect(await found('acme')).to.deep.equal([s.ended, s.queued]);
      // A reply, not the first message.
      expect(await found('client since')).to.deep.equal([s.waiting]);
      expect(await found('100%')).to.deep.equal([s.ended]);
      expect(await found('%')).to.deep.equal([s.ended]);
      expect(await found('_')).to.deep.equal([]);
      expect(await found('acme', '&state=queued')).to.deep.equal([s.queued]);
      const res = await admin.get('/sessions?q=acme');
      expect(totalOf(res.text)).to.equal('2 sessions matching these filters');
      expect(res.text).to.include('value="acme"');
      expect(res.text).to.include(`Searched the messages of the latest ${SESSION_SEARCH_WINDOW.toLocaleString('en')} sessions the other filters give.`);
    });

    it("never lists another organization's sessions, whatever the filters or search", async () => {
      for (const query of ['', '?q=secrets', '?q=Acme', '?state=waiting', '?scribe=second&q=another']) {
        const res = await admin.get(`/sessions${query}`);
        expect(res.status).to.equal(200);
        expect(res.text, query).not.to.include(stranger).and.not.include('another organization');
      }
      expect((await admin.get(`/sessions/${stranger}`)).status).to.equal(404);
    });

    it('shows the scribe page with its latest five sessions collapsed, open only while a reply is owed', async () => {
      const more = [];
      for (let i = 0; i < 3; i++) more.push(await session(t, [`Later question ${i}`], { state: 'waiting', replyDue: false }));
      const page = (await admin.get('/b/atlas')).text;
      const shown = [...page.matchAll(/<details class="session-details" id="session-([0-9a-f-]{36})"( open)?>/g)].map((m) => [m[1], Boolean(m[2])]);
      expect(shown).to.deep.equal([
        [more[2], false],
        [more[1], false],
        [more[0], false],
        [s.ended, true],
        [s.completed, false],
      ]);
      expect(page).to.include('<a class="hint" href="/sessions?scribe=atlas">All sessions of this scribe →</a>');
      expect(page).to.include('<span class="session-first">Later question 2</span>');
      expect(page).to.include('Goodbye!');
      expect(page).to.include(`<p><a href="/sessions/${more[2]}">Open the session →</a></p>`);
      expect(page).not.to.include(s.failed).and.not.include(s.second);
    });
  });

  it('pages 60 sessions forwards and back, with search kept in the links', async () => {
    const t = await h.tenant({ slug: 'busy' });
    const viewer = await signIn(h, t, 'viewer');
    const made: string[] = [];
    for (let i = 0; i < 60; i++) made.push(await session(t, [i % 2 ? `odd question ${i}` : `even question ${i}`]));
    const pages: string[][] = [];
    let html = '';
    for (let href: string | undefined = '/sessions'; href; href = linkOf(html, 'next')) {
      html = (await viewer.get(href)).text;
      pages.push(ids(html));
    }
    expect(pages.map((p) => p.length)).to.deep.equal([25, 25, 10]);
    expect(pages.flat()).to.deep.equal([...made].reverse());
    for (let i = 1; i >= 0; i--) {
      html = (await viewer.get(linkOf(html, 'prev')!)).text;
      expect(ids(html)).to.deep.equal(pages[i]);
    }
    expect(linkOf(html, 'prev')).to.equal(undefined);

    const odd = (await viewer.get('/sessions?q=ODD')).text;
    expect(totalOf(odd)).to.equal('30 sessions matching these filters');
    expect(linkOf(odd, 'next')).to.match(/^\/sessions\?q=ODD&before=/);
    const odd2 = (await viewer.get(linkOf(odd, 'next')!)).text;
    expect([...ids(odd), ...ids(odd2)]).to.deep.equal(made.filter((_, i) => i % 2).reverse());
  });

  it(`searches the newest ${SESSION_SEARCH_WINDOW.toLocaleString('en')} sessions the filters give, no further back`, async () => {
    const t = await h.tenant({ slug: 'archive' });
    const viewer = await signIn(h, t, 'viewer');
    const oldest = await session(t, ['the needle, oldest of all']);
    const rows = Array.from({ length: SESSION_SEARCH_WINDOW }, (_, i) => {
      const at = new Date(Date.parse('2026-11-22T00:00:00.000Z') + i * 1000).toISOString();
      return {
        id: newId(),
        organization_id: t.organizationId,
        scribe_id: t.scribe.id,
        state: i === 0 ? 'failed' : 'waiting',
        reply_due: false,
        attempts: 0,
        created_at: at,
        updated_at: at,
      };
    });
    for (let i = 0; i < rows.length; i += 400) {
      await h.db('sessions').insert(rows.slice(i, i + 400));
      await h.db('session_messages').insert(rows.slice(i, i + 400).map((r) => ({ session_id: r.id, author: 'user', text: 'hay', created_at: r.created_at })));
    }
    expect(ids((await viewer.get('/sessions?q=needle')).text)).to.deep.equal([]);
    // Narrowed by state, the window reaches it again.
    expect(ids((await viewer.get('/sessions?q=needle&state=queued')).text)).to.deep.equal([oldest]);
  });
});
