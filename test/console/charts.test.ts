import { expect } from 'chai';
import { createHarness, testClock, type Harness, type Tenant } from '../helpers/harness.js';
import { signIn, type ConsoleClient } from '../helpers/console.js';

/** The figures table of the chart `id` on a page: its head, and its rows by their time. */
function chartTable(html: string, id: string): { head: string[]; rows: Map<string, string[]> } {
  const figure = new RegExp(`<figure class="chart" id="${id}"[\\s\\S]*?</figure>`).exec(html)?.[0];
  if (!figure) throw new Error(`no chart ${id} on the page`);
  const head = [...figure.matchAll(/<th scope="col">(.*?)<\/th>/g)].map((m) => m[1]!);
  const rows = new Map<string, string[]>();
  for (const [, when, cells] of figure.matchAll(/<tr><th scope="row">(.*?)<\/th>(.*?)<\/tr>/g)) {
    rows.set(
      when!,
      [...cells!.matchAll(/<td class="num">(.*?)<\/td>/g)].map((m) => m[1]!),
    );
  }
  return { head, rows };
}

describe('console charts', () => {
  const clock = testClock();
  let h: Harness;
  let t: Tenant;
  let admin: ConsoleClient;

  /** A receipt of `scribe` answered 202 at `at`, then moved to `status` (finished `ms` later). */
  async function receipt(tenant: Tenant, at: string, status: string, ms = 0, slug = tenant.scribe.slug) {
    clock.set(at);
    const scribe = await h.services.scribes.getBySlug(tenant.organizationId, slug);
    const { id } = await h.services.requests.submit(scribe, { task: { summary: `Receipt at ${at}` } });
    const finished = status === 'fulfilled' || status === 'failed' ? new Date(Date.parse(at) + ms).toISOString() : null;
    await h.db('requests').where({ id }).update({ status, completed_at: finished });
  }

  before(async () => {
    h = await createHarness({ options: { clock, dispatchOnAccept: false, runOnNewWork: false } });
    t = await h.tenant();
    await h.services.scribes.create({ organizationId: t.organizationId, slug: 'hermes', name: 'hermes', state: 'active' });
    admin = await signIn(h, t, 'admin');
    const other = await h.tenant({ slug: 'atlas' });

    await receipt(t, '2026-11-21T06:04:59.999Z', 'fulfilled', 50); // a bucket before the dashboard's window
    await receipt(t, '2026-11-21T07:00:00.000Z', 'accepted', 0, 'hermes');
    await receipt(t, '2026-11-21T08:51:00.000Z', 'fulfilled', 100);
    await receipt(t, '2026-11-21T08:52:00.000Z', 'fulfilled', 300);
    await receipt(t, '2026-11-21T08:53:00.000Z', 'failed', 20);
    await receipt(t, '2026-11-21T08:54:59.999Z', 'accepted');
    await receipt(t, '2026-11-21T08:55:00.000Z', 'fulfilled', 2000);
    await receipt(t, '2026-11-21T09:01:00.000Z', 'dispatched');
    // Another organization's receipts, in the same minutes: counted on its own dashboard only.
    for (const at of ['2026-11-21T08:51:30.000Z', '2026-11-21T08:52:30.000Z', '2026-11-21T09:01:30.000Z']) await receipt(other, at, 'fulfilled', 5000);
    clock.set('2026-11-21T09:02:00.000Z');
  });
  after(() => h.close());

  it("charts the organization's receipts per minute by status, in 5-minute buckets over the last 3 hours", async () => {
    const res = await admin.get('/');
    expect(res.status).to.equal(200);
    const { head, rows } = chartTable(res.text, 'receipts-per-minute');
    expect(head).to.deep.equal(['Time (UTC)', 'fulfilled', 'failed', 'dispatched', 'accepted', 'All']);
    // 06:05 to 09:00: the bucket filling now is the last; 06:04:59.999 is before the first.
    expect([...rows.keys()]).to.have.length(36);
    expect([...rows.keys()][0]).to.equal('2026-11-21 06:05');
    expect([...rows.keys()].at(-1)).to.equal('2026-11-21 09:00');
    expect(rows.get('2026-11-21 06:05')).to.deep.equal(['0', '0', '0', '0', '0']);
    expect(rows.get('2026-11-21 07:00')).to.deep.equal(['0', '0', '0', '0.2', '0.2']);
    expect(rows.get('2026-11-21 08:50')).to.deep.equal(['0.4', '0.2', '0', '0.2', '0.8']);
    expect(rows.get('2026-11-21 08:55')).to.deep.equal(['0.2', '0', '0', '0', '0.2']);
    expect(rows.get('2026-11-21 09:00')).to.deep.equal(['0', '0', '0.2', '0', '0.2']);
    expect(res.text).to.include('Each bar is 5 minutes of receipts accepted (answered 202), averaged per minute and stacked by their status now.');
  });

  it('charts the median and 95th percentile from 202 to fulfilled, by the bucket a receipt was accepted in', async () => {
    const { head, rows } = chartTable((await admin.get('/')).text, 'fulfil-latency');
    expect(head).to.deep.equal(['Time (UTC)', '95th percentile', 'median', 'Fulfilled']);
    expect(rows.get('2026-11-21 08:50')).to.deep.equal(['300 ms', '100 ms', '2']);
    expect(rows.get('2026-11-21 08:55')).to.deep.equal(['2 s', '2 s', '1']);
    expect(rows.get('2026-11-21 09:00')).to.deep.equal(['—', '—', '0']);
  });

  it('reads at most the bound of fulfilled receipts per bucket, the first accepted in each', async () => {
    const buckets = [
      { from: '2026-11-21T08:50:00.000Z', to: '2026-11-21T08:55:00.000Z' },
      { from: '2026-11-21T08:55:00.000Z', to: '2026-11-21T09:00:00.000Z' },
      { from: '2026-11-21T09:00:00.000Z', to: '2026-11-21T09:05:00.000Z' },
    ];
    expect(await h.services.consoleReads.fulfilledLatencies(t.organizationId, buckets, 1)).to.deep.equal([[100], [2000], []]);
    expect(await h.services.consoleReads.fulfilledLatencies(t.organizationId, buckets, 5)).to.deep.equal([[100, 300], [2000], []]);
  });

  it('draws one bar segment per status and bucket with a value, in an SVG with a label', async () => {
    const html = (await admin.get('/')).text;
    const figure = /<figure class="chart" id="receipts-per-minute"[\s\S]*?<\/figure>/.exec(html)![0];
    expect(figure).to.match(/<svg class="chart-svg" viewBox="0 0 640 240" role="img" aria-label="Receipts per minute, last 3 hours\. Each bar is/);
    const segments = [...figure.matchAll(/<rect class="chart-bar chart-s-(\w+)"/g)].map((m) => m[1]);
    expect(segments).to.deep.equal(['accepted', 'fulfilled', 'failed', 'accepted', 'fulfilled', 'dispatched']);
    expect(figure).to.include('<title>2026-11-21 08:50 UTC: fulfilled 0.4 receipts per minute</title>');
    expect(figure).to.include('>Time (UTC)</text>');
  });

  it("charts a scribe's own receipts per hour over the last 24 hours on its page", async () => {
    const { head, rows } = chartTable((await admin.get('/b/atlas')).text, 'scribe-throughput');
    expect(head).to.deep.equal(['Time (UTC)', 'fulfilled', 'failed', 'dispatched', 'accepted', 'All']);
    expect([...rows.keys()]).to.have.length(24);
    expect([...rows.keys()][0]).to.equal('2026-11-20 10:00');
    expect(rows.get('2026-11-21 06:00')).to.deep.equal(['1', '0', '0', '0', '1']);
    expect(rows.get('2026-11-21 07:00'), "hermes's receipt is not atlas's").to.deep.equal(['0', '0', '0', '0', '0']);
    expect(rows.get('2026-11-21 08:00')).to.deep.equal(['3', '1', '0', '1', '5']);
    expect(rows.get('2026-11-21 09:00')).to.deep.equal(['0', '0', '1', '0', '1']);
  });

  it('shows the empty state, and no SVG, to an organization without receipts', async () => {
    const empty = await h.tenant({ slug: 'quiet' });
    const viewer = await signIn(h, empty, 'viewer');
    const dashboard = (await viewer.get('/')).text;
    expect(dashboard).to.include('No receipts in the last 3 hours.').and.include('No receipts fulfilled in the last 3 hours.');
    expect(dashboard).to.not.include('<svg class="chart-svg"');
    expect((await viewer.get('/b/quiet')).text).to.include('No receipts in the last 24 hours.');
  });

  it('leaves the charts out of a live refresh, which swaps only the live parts', async () => {
    const res = await admin.agent.get('/').set('X-Live-Refresh', '1');
    expect(res.status).to.equal(200);
    expect(res.text).to.include('data-live-part="dashboard"').and.not.include('<figure class="chart"');
    expect((await admin.agent.get('/b/atlas').set('X-Live-Refresh', '1')).text)
      .to.include('data-live-part="sessions"')
      .and.not.include('<figure class="chart"');
  });
});
