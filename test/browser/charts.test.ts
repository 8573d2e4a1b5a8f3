import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { consoleInBrowser, overflowsSideways } from '../helpers/browser.js';

/** The bars of the chart `id` as drawn: series, height in the SVG's units, height on screen, fill. */
async function barsOf(page: Page, id: string) {
  return page.locator(`#${id} rect.chart-bar`).evaluateAll((rects) =>
    rects.map((rect) => ({
      series: rect.getAttribute('data-series'),
      height: Number(rect.getAttribute('height')),
      onScreen: rect.getBoundingClientRect().height,
      fill: getComputedStyle(rect).fill,
    })),
  );
}

async function legendOf(page: Page, id: string) {
  return page
    .locator(`#${id} .chart-legend li`)
    .evaluateAll((items) => items.map((li) => ({ label: li.textContent?.trim(), colour: getComputedStyle(li.querySelector('.chart-swatch')!).backgroundColor })));
}

/**
 * The charts in Chromium, with receipts placed in the last half hour by direct updates: the
 * bars drawn, in proportion, in the legend's colours, on a desktop and a phone.
 */
describe('the console charts in Chromium', function () {
  this.timeout(60_000);
  const c = consoleInBrowser();
  const BUCKET = 5 * 60_000;

  before(async () => {
    const current = Math.floor(Date.now() / BUCKET) * BUCKET;
    const place = async (minutesBack: number, status: string, ms: number) => {
      const { request } = await c.api('POST', '/scribes/atlas/requests', { task: { summary: `A ${status} receipt` } });
      const created = current - minutesBack * 60_000 + 1000;
      const completed = status === 'accepted' ? null : new Date(created + ms).toISOString();
      await c.h
        .db('requests')
        .where({ id: request.id })
        .update({ status, created_at: new Date(created).toISOString(), completed_at: completed });
    };
    // Two buckets back: four fulfilled (100 to 400 ms) and one failed; six back: two still accepted.
    for (const ms of [100, 200, 300, 400]) await place(10, 'fulfilled', ms);
    await place(10, 'failed', 50);
    await place(30, 'accepted', 0);
    await place(30, 'accepted', 0);
  });

  for (const width of [1280, 390]) {
    it(`draws the dashboard's receipts and latency charts at ${width} px, in proportion, with their legends`, async () => {
      const page = await c.newPage(width);
      await page.goto(`${c.base}/`);
      await page.locator('#receipts-per-minute svg').waitFor();
      // Per minute: 0.8 fulfilled + 0.2 failed in one bar, 0.4 accepted in another, on a 0..1 scale 168 high.
      const receipts = await barsOf(page, 'receipts-per-minute');
      expect(receipts.map((b) => [b.series, b.height])).to.deep.equal([
        ['accepted', 67.2],
        ['fulfilled', 134.4],
        ['failed', 33.6],
      ]);
      expect(receipts[1]!.onScreen / receipts[2]!.onScreen).to.be.closeTo(4, 0.05);
      expect(receipts[0]!.onScreen).to.be.greaterThan(width === 1280 ? 20 : 5);
      const legend = await legendOf(page, 'receipts-per-minute');
      expect(legend.map((l) => l.label)).to.deep.equal(['accepted', 'dispatched', 'failed', 'fulfilled']);
      const colourOf = (label: string) => legend.find((l) => l.label === label)!.colour;
      for (const bar of receipts) expect(bar.fill, bar.series!).to.equal(colourOf(bar.series!));

      // p95 400 ms fills the 0..400 ms scale; the median, 200 ms, half of it, drawn over it.
      const latency = await barsOf(page, 'fulfil-latency');
      expect(latency.map((b) => [b.series, b.height])).to.deep.equal([
        ['p95', 168],
        ['median', 84],
      ]);
      expect(latency[0]!.onScreen / latency[1]!.onScreen).to.be.closeTo(2, 0.05);
      expect((await legendOf(page, 'fulfil-latency')).map((l) => l.label)).to.deep.equal(['95th percentile', 'median']);
      expect(await page.locator('#fulfil-latency svg').getAttribute('aria-label')).to.match(/^202 → fulfilled, last 3 hours\. Each bar is/);
      expect(await page.locator('#receipts-per-minute .chart-x text').last().textContent()).to.equal('Time (UTC)');

      // The table is there for whoever opens it.
      await page.locator('#fulfil-latency summary').click();
      await page.locator('#fulfil-latency table').getByRole('cell', { name: '400 ms' }).waitFor();
      expect(await overflowsSideways(page), 'the page scrolls sideways').to.equal(false);
      await c.shot(`charts-dashboard-${width}`, page);
      await page.close();
    });

    it(`draws a scribe's receipts per hour on its page at ${width} px`, async () => {
      const page = await c.newPage(width);
      await page.goto(`${c.base}/b/atlas`);
      await page.locator('#scribe-throughput svg').waitFor();
      const bars = await barsOf(page, 'scribe-throughput');
      expect(bars.map((b) => b.series).sort()).to.deep.equal(['accepted', 'failed', 'fulfilled']);
      const height = (series: string) => bars.find((b) => b.series === series)!.height;
      // Counts per hour: 4 fulfilled, 1 failed, 2 accepted (one or two bars, by where the hour falls).
      expect(height('fulfilled') / height('failed')).to.be.closeTo(4, 0.01);
      expect(height('accepted') / height('failed')).to.be.closeTo(2, 0.01);
      expect((await legendOf(page, 'scribe-throughput')).map((l) => l.label)).to.deep.equal(['accepted', 'dispatched', 'failed', 'fulfilled']);
      expect(await overflowsSideways(page), 'the page scrolls sideways').to.equal(false);
      await c.shot(`charts-scribe-${width}`, page);
      await page.close();
    });
  }
});
