import { expect } from 'chai';
import { createHarness, staffOf, testClock, type Harness, type Tenant } from '../helpers/harness.js';
import { signIn, type ConsoleClient } from '../helpers/console.js';
import { newEventId, newId } from '../../src/lib/ids.js';

/** The href of a pager link (`rel`), or undefined when the page has none. */
const linkOf = (html: string, rel: 'first' | 'prev' | 'next') => new RegExp(`href="([^"]+)" rel="${rel}"`).exec(html)?.[1]?.replace(/&amp;/g, '&');
/** The total the pager shows. */
const totalOf = (html: string) => /<span class="pager-total">([^<]+)<\/span>/.exec(html)?.[1];

/** A moment `i` seconds after a base, two items to a second, so that ties on the time are broken by the id. */
const at = (i: number) => new Date(Date.parse('2026-11-01T00:00:00.000Z') + Math.floor(i / 2) * 1000).toISOString();
/** Rows newest first as the lists order them: by time, then id, both descending. */
const newestFirst = <T extends { time: string; id: string }>(rows: T[]) => [...rows].sort((a, b) => (a.time === b.time ? (a.id < b.id ? 1 : -1) : a.time < b.time ? 1 : -1));

describe('console: two-way pagers', () => {
  const clock = testClock('2026-11-24T12:00:00.000Z');
  let h: Harness;
  let t: Tenant;
  let admin: ConsoleClient;
  before(async () => {
    h = await createHarness({ env: { WEBHOOKS_ALLOW_PRIVATE: 'true' }, options: { clock, dispatchOnAccept: false, runOnNewWork: false } });
    t = await h.tenant();
    admin = await signIn(h, t, 'admin');
  });
  after(() => h.close());

  /**
   * Pages forwards with "Next" to the end, then back with "Previous" to the start: the same
   * pages, in order, each item once. Returns the pages (item keys as `keysOf` reads them).
   */
  async function walk(path: string, keysOf: (html: string) => string[]): Promise<{ pages: string[][]; first: string; last: string }> {
    const pages: string[][] = [];
    let html = (await admin.get(path)).text;
    const first = html;
    expect(linkOf(html, 'first'), 'no First link on the first page').to.equal(undefined);
    expect(linkOf(html, 'prev'), 'no Previous link on the first page').to.equal(undefined);
    for (let href: string | undefined = path; href; href = linkOf(html, 'next')) {
      const res = await admin.get(href);
      expect(res.status, href).to.equal(200);
      html = res.text;
      pages.push(keysOf(html));
    }
    const last = html;
    for (let i = pages.length - 2; i >= 0; i--) {
      const href = linkOf(html, 'prev');
      expect(href, `a Previous link back to page ${i + 1}`).to.be.a('string');
      expect(href).to.include('after=');
      html = (await admin.get(href!)).text;
      expect(keysOf(html), `page ${i + 1} again`).to.deep.equal(pages[i]);
    }
    expect(linkOf(html, 'prev'), 'back at the first page').to.equal(undefined);
    expect(linkOf(last, 'first'), 'First from the last page').to.equal(path);
    return { pages, first, last };
  }

  it('pages receipts forwards and back across 3 pages, with their total', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) {
      clock.set(at(i));
      ids.push((await h.services.requests.submit(t.scribe, { task: { summary: `receipt ${i}` } })).id);
    }
    clock.set('2026-11-24T12:00:00.000Z');
    const { pages, first, last } = await walk('/receipts', (html) => [...html.matchAll(/href="\/receipts\/(req_\w+)"/g)].map((m) => m[1]!));
    expect(pages.map((p) => p.length)).to.deep.equal([25, 25, 10]);
    expect(pages.flat()).to.deep.equal([...ids].reverse());
    expect(totalOf(first)).to.equal('60 receipts in all');
    expect(first).to.include('<span class="pager-order">Newest first</span>');
    expect(linkOf(last, 'next'), 'no Next link on the last page').to.equal(undefined);
    expect(last).to.include('<span class="button" aria-disabled="true">Next →</span>');
    // Filters are kept by every link and said by the total.
    const filtered = (await admin.get('/receipts?status=accepted')).text;
    expect(totalOf(filtered)).to.equal('60 receipts matching these filters');
    expect(linkOf(filtered, 'next')).to.match(/^\/receipts\?status=accepted&before=/);
    expect(totalOf((await admin.get('/receipts?status=failed')).text)).to.equal('0 receipts matching these filters');
  });

  it('goes back to a whole first page when items were added at the top meanwhile, or the previous page would be short', async () => {
    const page1 = (await admin.get('/receipts')).text;
    const page2 = (await admin.get(linkOf(page1, 'next')!)).text;
    const ids = (html: string) => [...html.matchAll(/href="\/receipts\/(req_\w+)"/g)].map((m) => m[1]!);
    // Three new receipts arrive while staff read page 2.
    const added: string[] = [];
    for (let i = 0; i < 3; i++) added.push((await h.services.requests.submit(t.scribe, { task: { summary: `late ${i}` } })).id);
    const back = (await admin.get(linkOf(page2, 'prev')!)).text;
    expect(ids(back), 'the page before page 2, as it was').to.deep.equal(ids(page1));
    expect(linkOf(back, 'prev'), 'newer items are there to go back to').to.be.a('string');
    // Only three are newer still: not a short page of three, the first page whole.
    const top = (await admin.get(linkOf(back, 'prev')!)).text;
    expect(ids(top)).to.deep.equal([...added.reverse(), ...ids(page1).slice(0, 22)]);
    expect(linkOf(top, 'prev')).to.equal(undefined);
    expect(linkOf(top, 'first')).to.equal(undefined);
    expect(totalOf(top)).to.equal('63 receipts in all');
  });

  it('pages tasks, ordered by (created_at, id) with ties on the time, forwards and back', async () => {
    const rows = Array.from({ length: 55 }, (_, i) => ({ id: newId(), time: at(i) }));
    await h.db('tasks').insert(
      rows.map((r, i) => ({
        id: r.id,
        organization_id: t.organizationId,
        scribe_id: t.scribe.id,
        status: 'open',
        title: `task ${i}`,
        summary: 's',
        created_at: r.time,
        updated_at: r.time,
      })),
    );
    const { pages, first } = await walk('/tasks', (html) => [...html.matchAll(/href="\/tasks\/([0-9a-f-]{36})"/g)].map((m) => m[1]!));
    expect(pages.map((p) => p.length)).to.deep.equal([25, 25, 5]);
    expect(pages.flat()).to.deep.equal(newestFirst(rows).map((r) => r.id));
    expect(totalOf(first)).to.equal('55 tasks in all');
  });

  it('pages the audit log by its id, forwards and back, with filters kept', async () => {
    for (let i = 0; i < 120; i++) await h.services.audit.record(staffOf(t), 'pager.test', { type: 'scribe', id: t.scribe.id }, `event-${i}`);
    const { pages, first } = await walk('/audit?action=pager.test', (html) => [...html.matchAll(/<td>(event-\d+)<\/td>/g)].map((m) => m[1]!));
    expect(pages.map((p) => p.length)).to.deep.equal([50, 50, 20]);
    expect(pages.flat()).to.deep.equal(Array.from({ length: 120 }, (_, i) => `event-${119 - i}`));
    expect(totalOf(first)).to.equal('120 events matching these filters');
    expect(linkOf(first, 'next')).to.match(/^\/audit\?action=pager\.test&before=\d+$/);
    expect((await admin.get('/audit?after=abc')).status).to.equal(400);
  });

  it("pages a webhook endpoint's deliveries, forwards and back", async () => {
    const { endpoint } = await h.services.webhooks.create(staffOf(t), { url: 'http://127.0.0.1:9/hook', description: '', events: null });
    const rows = Array.from({ length: 110 }, (_, i) => ({ id: newId(), event: newEventId(new Date(at(i))), time: at(i) }));
    await h.db('webhook_events').insert(rows.map((r) => ({ id: r.event, organization_id: t.organizationId, type: 'request.fulfilled', body: '{}', created_at: r.time })));
    await h.db('webhook_deliveries').insert(
      rows.map((r, i) => ({
        id: r.id,
        event_id: r.event,
        endpoint_id: endpoint.id,
        event_type: 'request.fulfilled',
        status: i % 2 ? 'failed' : 'delivered',
        attempts: 1,
        available_at: r.time,
        created_at: r.time,
        updated_at: r.time,
      })),
    );
    const { pages, first } = await walk(`/webhooks/${endpoint.id}`, (html) => [...html.matchAll(/class="hint mono">(evt_\w+)</g)].map((m) => m[1]!));
    expect(pages.map((p) => p.length)).to.deep.equal([50, 50, 10]);
    expect(pages.flat()).to.deep.equal(newestFirst(rows).map((r) => r.event));
    expect(totalOf(first)).to.equal('110 deliveries to this endpoint');
    expect(totalOf((await admin.get(`/webhooks/${endpoint.id}?status=failed`)).text)).to.equal('55 deliveries to this endpoint matching these filters');
  });

  it("pages a channel's deliveries by the time received, forwards and back", async () => {
    const { channel } = await h.services.channels.create(staffOf(t), t.scribe.slug, { kind: 'webhook', name: 'Hooks' });
    const rows = Array.from({ length: 101 }, (_, i) => ({ id: newId(), time: at(i), sender: `sender-${i}.example.com` }));
    await h
      .db('channel_deliveries')
      .insert(rows.map((r) => ({ id: r.id, channel_id: channel.id, received_at: r.time, sender: r.sender, outcome: 'refused', status: 401, reason: 'bad signature' })));
    const { pages, first } = await walk(`/channels/${channel.id}`, (html) => [...html.matchAll(/<td class="mono">(sender-\d+\.example\.com)<\/td>/g)].map((m) => m[1]!));
    expect(pages.map((p) => p.length)).to.deep.equal([50, 50, 1]);
    expect(pages.flat()).to.deep.equal(newestFirst(rows).map((r) => r.sender));
    expect(totalOf(first)).to.equal('101 deliveries to this channel');
  });

  it("pages a schedule's fires by fire time, forwards and back", async () => {
    const schedule = await h.services.schedules.create(staffOf(t), t.scribe.slug, {
      cron: '0 9 * * *',
      timezone: 'UTC',
      overlap: 'skip',
      summary: 'Daily',
      title: null,
      acceptance_criteria: null,
    });
    await h.services.schedules.pause(staffOf(t), schedule.id);
    const rows = Array.from({ length: 120 }, (_, i) => ({ id: newId(), time: new Date(Date.parse('2026-07-01T09:00:00.000Z') + i * 86_400_000).toISOString() }));
    await h
      .db('schedule_fires')
      .insert(rows.map((r) => ({ id: r.id, schedule_id: schedule.id, fire_at: r.time, fired_at: r.time, outcome: 'skipped', reason: 'scribe not active', manual: false })));
    const { pages, first } = await walk(`/schedules/${schedule.id}`, (html) => [...html.matchAll(/<td><time datetime="([^"]+)"/g)].map((m) => m[1]!));
    expect(pages.map((p) => p.length)).to.deep.equal([50, 50, 20]);
    expect(pages.flat()).to.deep.equal(newestFirst(rows).map((r) => r.time));
    expect(totalOf(first)).to.equal('120 fires of this schedule');
    expect(first).to.include('<span class="pager-order">Latest fire time first</span>');
  });

  it('counts up to 10,000 and says "more than" beyond', async () => {
    const other = await h.tenant({ slug: 'busy' });
    const rows = Array.from({ length: 10_001 }, (_, i) => ({
      id: newId(),
      organization_id: other.organizationId,
      scribe_id: other.scribe.id,
      status: 'done',
      title: `t${i}`,
      summary: 's',
      created_at: at(i),
      updated_at: at(i),
    }));
    for (let i = 0; i < rows.length; i += 500) await h.db('tasks').insert(rows.slice(i, i + 500));
    const busy = await signIn(h, other, 'viewer');
    expect(totalOf((await busy.get('/tasks')).text)).to.equal('more than 10,000 tasks in all');
    expect(totalOf((await busy.get('/tasks?status=open')).text)).to.equal('0 tasks matching these filters');
  });
});
