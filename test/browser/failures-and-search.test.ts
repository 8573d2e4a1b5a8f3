import { expect } from 'chai';
import { consoleInBrowser, expectText, overflowsSideways } from '../helpers/browser.js';

/** The header's search box, and acting on failures (one, and a filtered selection), in Chromium. */
describe('the console in Chromium: search, retry and discard', function () {
  this.timeout(60_000);
  const c = consoleInBrowser();

  /** A receipt as the dispatcher leaves it when it gives up. */
  async function failedReceipt(title: string): Promise<string> {
    const { request } = await c.api('POST', '/scribes/atlas/requests', { task: { title, summary: title } });
    const at = new Date().toISOString();
    await c.h.db('requests').where({ id: request.id }).update({ status: 'failed', error_message: 'Dispatch failed after 5 attempts', completed_at: at, updated_at: at });
    return request.id;
  }

  it('finds a receipt by its id from the header, and lists receipts by words of their title', async () => {
    const { page } = c;
    const id = await failedReceipt('Quarterly report for Acme');
    await page.goto(`${c.base}/tasks`);
    await page.getByRole('searchbox', { name: 'Find an id, slug or title' }).fill(id);
    await page.keyboard.press('Enter');
    await page.waitForURL(`${c.base}/receipts/${id}`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Quarterly report for Acme');

    await page.getByRole('searchbox', { name: 'Find an id, slug or title' }).fill('quarterly');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/search\?q=quarterly/);
    expect(await page.locator('main table a[href^="/receipts/"]').allTextContents()).to.deep.equal(['Quarterly report for Acme']);
    await c.shot('search-results');
  });

  it('finds an entry by its primary field and a session by the text of a message from the header, at 1366 and 390 px wide', async () => {
    const type = await c.h.services.entryTypes.create(c.t.organizationId, { name: 'Vessels', fields: [{ name: 'Name', type: 'text', primary: true }] });
    const entry = await c.h.services.entries.create(c.t.organizationId, type.id, { fields: { Name: 'MV Albatross' } });
    const { session_id: sessionId } = await c.api('POST', '/scribes/atlas/chat', { message: 'Where is the <i>Albatross</i> berthed?' });
    const { page } = c;
    for (const width of [1366, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${c.base}/sessions`);
      const box = page.getByRole('searchbox', { name: 'Find an id, slug or title' });
      expect(await box.getAttribute('placeholder')).to.equal('Find id, slug, title, entry, message…');
      await box.fill('albatross');
      await page.keyboard.press('Enter');
      await page.waitForURL(/\/search\?q=albatross/);
      expect(await page.getByRole('link', { name: 'MV Albatross' }).getAttribute('href')).to.equal(`/entries/${entry.id}`);
      const session = page.locator('.found-sessions li');
      expect(await session.getByRole('link').getAttribute('href')).to.equal(`/sessions/${sessionId}`);
      expect(await session.locator('.snippet').textContent()).to.equal('Where is the <i>Albatross</i> berthed?');
      expect(await session.locator('mark').textContent()).to.equal('Albatross');
      expect(await overflowsSideways(page), `${width} px`).to.equal(false);
      await c.shot(`search-entries-and-sessions-${width}`);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('retries a failed receipt from its page and shows the new receipt linked to the old', async () => {
    const { page } = c;
    const id = await failedReceipt('Retry me');
    await page.goto(`${c.base}/receipts/${id}`);
    await page.getByRole('button', { name: 'Retry' }).click();
    await expectText(page.locator('.flash-notice'), 'Retried as a new receipt.');
    const made = await c.h.db('requests').where({ retry_of: id }).first('id');
    expect(page.url()).to.equal(`${c.base}/receipts/${made.id}`);
    await page.getByRole('link', { name: id }).click();
    await page.waitForURL(`${c.base}/receipts/${id}`);
    await expectText(page.locator('main'), `Retried as ${made.id}`);
    expect(await page.getByRole('button', { name: 'Retry' }).count()).to.equal(0);
    await c.shot('receipt-retried');
  });

  it('asks before discarding: dismissed, nothing changes; accepted, the failure is discarded', async () => {
    const { page } = c;
    const id = await failedReceipt('Discard me');
    await page.goto(`${c.base}/receipts/${id}`);
    page.once('dialog', (dialog) => void dialog.dismiss());
    await page.getByRole('button', { name: 'Discard' }).click();
    await page.waitForTimeout(200);
    expect((await c.h.db('requests').where({ id }).first('discarded_at')).discarded_at).to.equal(null);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Discard' }).click();
    await expectText(page.locator('main'), 'Discarded just now: it no longer shows among the failures.');
    expect(await page.getByText('Discarded').count()).to.equal(1);
    expect(await page.locator('.flash').count()).to.equal(0);
    expect((await c.h.db('requests').where({ id }).first('discarded_at')).discarded_at).to.be.a('string');
  });

  it('bulk-retries the failed receipts a filter selects, after a preview that counts them', async () => {
    const { page } = c;
    const ids = [await failedReceipt('Batch invoice 1'), await failedReceipt('Batch invoice 2'), await failedReceipt('Batch invoice 3')];
    await page.goto(`${c.base}/receipts`);
    await page.getByLabel('Status').selectOption('failed');
    await page.getByLabel('Title contains').fill('batch invoice');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/status=failed/);
    await page.getByRole('link', { name: 'Retry all…' }).click();
    await page.waitForURL(/\/receipts\/bulk\?/);
    expect(await page.locator('#bulk-count').textContent()).to.equal('3 receipts');
    await c.shot('bulk-preview');
    await page.getByRole('button', { name: 'Retry 3 receipts' }).click();
    await expectText(page.locator('.flash-notice'), 'Retried 3 receipts.');
    expect(await c.h.db('requests').whereIn('retry_of', ids).count({ n: '*' }).first()).to.deep.equal({ n: 3 });
  });

  it('keeps the search box and the failure actions usable at 390 px wide', async () => {
    const phone = await c.newPage(390);
    const id = await failedReceipt('A phone-sized failure with a rather long title that has to wrap somewhere');
    for (const route of [`/receipts/${id}`, '/receipts?status=failed', '/receipts/bulk?status=failed&action=retry', '/search?q=failure']) {
      await phone.goto(`${c.base}${route}`);
      expect(await overflowsSideways(phone), route).to.equal(false);
    }
    await phone.goto(`${c.base}/receipts/${id}`);
    expect(await phone.getByRole('searchbox', { name: 'Find an id, slug or title' }).isVisible()).to.equal(true);
    expect(await phone.getByRole('button', { name: 'Retry' }).isVisible()).to.equal(true);
    await c.shot('receipt-failed-390', phone);
    await phone.close();
  });
});
