import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { consoleInBrowser, expectText, overflowsSideways, signInPage } from '../helpers/browser.js';
import { testClock } from '../helpers/harness.js';
import { newId } from '../../src/lib/ids.js';

/**
 * The sessions list, two-way paging and local times in a real Chromium. The services' clock
 * is fixed, so the times the pages write (relative or in the zone) are known.
 */
describe('sessions, paging and local times in Chromium', function () {
  this.timeout(60_000);
  const clock = testClock('2026-11-24T12:00:00.000Z');
  const c = consoleInBrowser({ options: { clock } });
  const sessions: Record<string, string> = {};

  /** A session of atlas holding `messages`, started at `at`. */
  async function session(at: string, messages: string[], state = 'waiting', replyDue = false) {
    const id = newId();
    await c.h.db('sessions').insert({ id, organization_id: c.t.organizationId, scribe_id: c.t.scribe.id, state, reply_due: replyDue, attempts: 0, created_at: at, updated_at: at });
    await c.h.db('session_messages').insert(messages.map((text, i) => ({ session_id: id, author: i % 2 ? 'scribe' : 'user', text, created_at: at })));
    return id;
  }

  before(async () => {
    // 55 plain sessions over the last days, then three to find by filter and search.
    for (let i = 0; i < 55; i++) await session(new Date(Date.parse('2026-11-19T00:00:00.000Z') + i * 3_600_000).toISOString(), [`Routine question ${i}`, 'Routine answer']);
    sessions.failed = await session('2026-11-22T10:00:00.000Z', ['Draft the Acme renewal'], 'failed');
    sessions.acme = await session('2026-11-22T11:00:00.000Z', ['Who signs for us?', 'The Acme contract names Dana.']);
    sessions.due = await session('2026-11-24T11:58:00.000Z', ['Anything new on Globex?'], 'queued', true);
  });

  const rowsOn = (page: Page) => page.locator('#sessions tbody tr a[href^="/sessions/"]').allTextContents();

  it('lists sessions, filters them by state and searches their messages', async () => {
    const page = c.page;
    await page.goto(`${c.base}/`);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Sessions' }).click();
    await page.waitForURL(`${c.base}/sessions`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Sessions');
    expect((await rowsOn(page)).slice(0, 3)).to.deep.equal(['Anything new on Globex?', 'Who signs for us?', 'Draft the Acme renewal']);
    expect(await page.locator('.pager-total').first().textContent()).to.equal('58 sessions in all');

    await page.getByLabel('State').selectOption('reply_due');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/state=reply_due/);
    expect(await rowsOn(page)).to.deep.equal(['Anything new on Globex?']);
    expect(await page.locator('.pager-total').textContent()).to.equal('1 session matching these filters');

    await page.getByLabel('State').selectOption('');
    await page.getByLabel('Messages containing').fill('acme');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/q=acme/);
    // A reply matches as well as a first message, in any case.
    expect(await rowsOn(page)).to.deep.equal(['Who signs for us?', 'Draft the Acme renewal']);
    await c.shot('sessions-search');
    await page.getByRole('link', { name: 'Who signs for us?' }).click();
    // Titled by its first message, as the list shows it.
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Who signs for us?');
    await expectText(page.locator('main'), `Session ${sessions.acme}`);
  });

  it('pages forwards with Next and back with Previous and First', async () => {
    const page = c.page;
    await page.goto(`${c.base}/sessions`);
    const pages: string[][] = [await rowsOn(page)];
    const pager = page.getByRole('navigation', { name: 'Pages' });
    expect(await pager.locator('[aria-disabled="true"]').allTextContents()).to.deep.equal(['« First', '← Previous']);
    for (let i = 0; i < 2; i++) {
      await pager.getByRole('link', { name: 'Next →' }).click();
      await page.waitForURL(/before=/);
      pages.push(await rowsOn(page));
    }
    expect(pages.map((p) => p.length)).to.deep.equal([25, 25, 8]);
    expect(new Set(pages.flat()).size, 'no session on two pages').to.equal(58);
    expect(await pager.locator('[aria-disabled="true"]').allTextContents()).to.deep.equal(['Next →']);
    await c.shot('sessions-last-page');

    await pager.getByRole('link', { name: '← Previous' }).click();
    await page.waitForURL(/after=/);
    expect(await rowsOn(page)).to.deep.equal(pages[1]);
    await pager.getByRole('link', { name: '← Previous' }).click();
    await page.waitForURL(/after=/);
    expect(await rowsOn(page)).to.deep.equal(pages[0]);
    expect(await pager.locator('[aria-disabled="true"]').allTextContents()).to.deep.equal(['« First', '← Previous']);

    await pager.getByRole('link', { name: 'Next →' }).click();
    await pager.getByRole('link', { name: 'Next →' }).click();
    await page.waitForURL(/before=/);
    await pager.getByRole('link', { name: '« First' }).click();
    await page.waitForURL(`${c.base}/sessions`);
    expect(await rowsOn(page)).to.deep.equal(pages[0]);
    expect(await pager.locator('.pager-order').textContent()).to.equal('Newest first');
  });

  it("shows the scribe's latest five sessions collapsed, each opening to its transcript", async () => {
    const page = c.page;
    await page.goto(`${c.base}/b/atlas`);
    const shown = page.locator('[data-live-part="sessions"] details.session-details');
    expect(await shown.count()).to.equal(5);
    // Open only while the scribe owes a reply.
    expect(await page.locator(`#session-${sessions.due}`).getAttribute('open')).to.equal('');
    const acme = page.locator(`#session-${sessions.acme}`);
    expect(await acme.getAttribute('open')).to.equal(null);
    expect(await acme.locator('.msg-scribe .msg-text').isVisible()).to.equal(false);
    await acme.locator('summary').click();
    expect(await acme.locator('.msg-scribe .msg-text').textContent()).to.equal('The Acme contract names Dana.');
    expect(await acme.locator('.msg-scribe .msg-text').isVisible()).to.equal(true);
    await c.shot('scribe-sessions');
    await page.getByRole('link', { name: 'All sessions of this scribe →' }).click();
    await page.waitForURL(`${c.base}/sessions?scribe=atlas`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Sessions of atlas');
  });

  it('writes times in the zone the browser reported at sign-in, with UTC in the title', async () => {
    const context = await c.browser.newContext({ timezoneId: 'America/New_York', viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      await c.h.services.users.create({ organizationId: c.t.organizationId, email: 'newyork@example.com', password: 'correct horse battery', role: 'viewer' });
      await signInPage(page, c.base, 'newyork@example.com');
      expect((await c.h.db('users').where({ email: 'newyork@example.com' }).first('time_zone')).time_zone).to.equal('America/New_York');
      await page.goto(`${c.base}/sessions?q=acme`);
      const started = page.locator(`#sessions tr:has(a[href="/sessions/${sessions.acme}"]) time`).first();
      // 11:00 UTC on 22 Nov is 06:00 in New York.
      expect(await started.textContent()).to.equal('22 Nov 2026, 06:00');
      expect(await started.getAttribute('title')).to.equal('2026-11-22 11:00:00 UTC');
      expect(await started.getAttribute('datetime')).to.equal('2026-11-22T11:00:00.000Z');
      // Recent times read relative.
      await page.goto(`${c.base}/sessions?state=reply_due`);
      expect(await page.locator('#sessions time').first().textContent()).to.equal('2 minutes ago');
      await page.goto(`${c.base}/account`);
      expect(await page.locator('#current-zone').textContent()).to.equal('America/New_York');
      expect(await page.getByLabel('Show times in').inputValue()).to.equal('America/New_York');
      await c.shot('account-zone', page);
    } finally {
      await context.close();
    }
  });

  it('fits a phone: the sessions list, the pager and the account page at 390 px, no sideways scrolling', async () => {
    const page = await c.newPage(390);
    for (const path of ['/sessions', '/sessions?q=acme', '/account', '/audit']) {
      await page.goto(`${c.base}${path}`);
      expect(await overflowsSideways(page), path).to.equal(false);
    }
    await page.goto(`${c.base}/sessions`);
    await c.shot('sessions-phone', page);
    await page.close();
  });
});
