import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { consoleInBrowser, expectText, FULL_CHROMIUM, overflowsSideways } from '../helpers/browser.js';
import { createLogger } from '../../src/logger.js';
import { createServices } from '../../src/services.js';
import { DEMO, seed } from '../../seeds/demo.js';
import { FAILING_ENDPOINT } from '../../seeds/demo-history.js';

/**
 * The demo as a first start shows it, in Chromium: the seed's three days of history behind
 * the dashboard's charts, its failures, a waiting task, the failing webhook endpoint and a
 * schedule's past fires, signed in as the demo's admin, on a desktop and a phone. In the full
 * browser, as a reader trying the demo sees it; the other browser tests use the headless shell.
 */
describe('the demo in Chromium', function () {
  this.timeout(90_000);
  const c = consoleInBrowser({}, { executablePath: FULL_CHROMIUM });

  before(async () => {
    await seed((options) => createServices({ config: c.h.config, db: c.h.db, logger: createLogger('silent'), options }));
  });

  async function demoPage(width: number): Promise<Page> {
    const page = await c.browser.newPage({ viewport: { width, height: 900 } });
    await page.goto(`${c.base}/login`);
    await page.getByLabel('Email').fill(DEMO.userEmail);
    await page.getByLabel('Password').fill(DEMO.userPassword);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${c.base}/`);
    return page;
  }

  for (const width of [1366, 390]) {
    it(`shows a first start's history at ${width} px: charts drawn, failures, a waiting task, a failing endpoint, past fires`, async () => {
      const page = await demoPage(width);
      await page.locator('#receipts-per-minute svg').waitFor();
      expect(await page.locator('#receipts-per-minute rect.chart-bar').count(), 'receipt bars on the dashboard').to.be.above(10);
      await expectText(page.locator('main'), 'Scribe is not active');
      await expectText(page.locator('main'), 'Import the March invoices');
      expect(await overflowsSideways(page), 'the dashboard scrolls sideways').to.equal(false);

      await page.goto(`${c.base}/tasks?status=waiting`);
      expect(await page.locator('main tbody tr, main .list > li').count(), 'a task waits for input').to.be.at.least(1);

      await page.goto(`${c.base}/webhooks`);
      await expectText(page.locator('main'), FAILING_ENDPOINT.url);

      await page.goto(`${c.base}/schedules`);
      // Its last fire, as the console writes times: "… ago" within twelve hours, else a date (the digest fires at 08:00 Berlin).
      const { last_fire_at: lastFire } = await c.h.db('schedules').where({ title: 'Morning digest' }).first('last_fire_at');
      expect(lastFire, 'the digest has fired in the history').to.not.equal(null);
      const shown = page.locator('main tr').filter({ hasText: 'Morning digest' }).locator('td').nth(4).locator('time');
      await shown.waitFor();
      expect(Date.parse((await shown.getAttribute('datetime'))!)).to.equal(new Date(lastFire).getTime());
      expect(await shown.textContent()).to.match(/ ago$|^\d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2}$/);
      expect(await overflowsSideways(page), 'the schedules list scrolls sideways').to.equal(false);
      await page.close();
    });
  }
});
