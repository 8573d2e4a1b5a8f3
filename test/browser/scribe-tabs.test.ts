import { expect } from 'chai';
import { consoleInBrowser, expectText, overflowsSideways } from '../helpers/browser.js';

/**
 * A scribe's page in Chromium on a desktop and a phone: Activity first, with its latest
 * session, receipt and task, and Settings one link away, whose forms come back to it.
 */
describe("a scribe's Activity and Settings tabs in Chromium", function () {
  this.timeout(60_000);
  const c = consoleInBrowser();
  let ids: { receiptId: string; taskId: string; sessionId: string };

  before(async () => {
    const { request } = await c.api('POST', '/scribes/atlas/requests', { task: { title: 'Compare the vendors', summary: 'Which vendor is cheapest?' } });
    await c.h.services.dispatcher.tick();
    const { session_id: sessionId } = await c.api('POST', '/scribes/atlas/chat', { message: 'What are you working on?' });
    const task = await c.h.db('tasks').where({ request_id: request.id }).first('id');
    ids = { receiptId: request.id, taskId: task.id, sessionId };
  });

  for (const width of [1366, 390]) {
    it(`lists its session, receipt and task on Activity, and holds the agent form on Settings, at ${width} px`, async () => {
      // The harness's page is signed in already: only the phone needs a sign-in of its own.
      const page = width === 1366 ? c.page : await c.newPage(width);
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${c.base}/b/atlas`);
      const tabs = page.getByRole('navigation', { name: 'Scribe' });
      expect(await tabs.getByRole('link', { name: 'Activity' }).getAttribute('aria-current')).to.equal('page');
      expect(await page.locator(`#session-${ids.sessionId} .session-first`).textContent()).to.equal('What are you working on?');
      const receipt = page.locator('[data-live-part="receipts"] tbody tr');
      expect(await receipt.getByRole('link', { name: 'Compare the vendors' }).getAttribute('href')).to.equal(`/receipts/${ids.receiptId}`);
      expect(await receipt.locator('.badge').textContent()).to.equal('fulfilled');
      const task = page.locator('[data-live-part="tasks"] tbody tr');
      expect(await task.getByRole('link', { name: 'Compare the vendors' }).getAttribute('href')).to.equal(`/tasks/${ids.taskId}`);
      expect(await task.locator('.badge').textContent()).to.equal('open');
      expect(await page.getByRole('button', { name: 'Save agent' }).count()).to.equal(0);
      expect(await overflowsSideways(page), 'Activity scrolls sideways').to.equal(false);
      await c.shot(`scribe-activity-${width}`, page);

      await tabs.getByRole('link', { name: 'Settings' }).click();
      await page.waitForURL(`${c.base}/b/atlas/settings`);
      expect(await tabs.getByRole('link', { name: 'Settings' }).getAttribute('aria-current')).to.equal('page');
      expect(await tabs.getByRole('link', { name: 'Activity' }).getAttribute('aria-current')).to.equal(null);
      await page.getByLabel('Instructions').fill(`Answer in ${width} words at most.`);
      await page.getByRole('button', { name: 'Save agent' }).click();
      await expectText(page.locator('.flash-notice'), 'Agent settings saved.');
      expect(page.url()).to.equal(`${c.base}/b/atlas/settings`);
      expect(await page.getByLabel('Instructions').inputValue()).to.equal(`Answer in ${width} words at most.`);
      expect(await page.locator('[data-live-part="sessions"]').count()).to.equal(0);
      expect(await overflowsSideways(page), 'Settings scrolls sideways').to.equal(false);
      await c.shot(`scribe-settings-${width}`, page);
      if (page !== c.page) await page.close();
    });
  }
});
