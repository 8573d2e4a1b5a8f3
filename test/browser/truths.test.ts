import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { consoleInBrowser, expectText, overflowsSideways } from '../helpers/browser.js';
import { staffOf } from '../helpers/harness.js';
import { operatorActor } from '../../src/audit/service.js';

/** What the console says matches the state it shows: times, backlogs, schedules' fires, entry type ids; at 1366 and 390 px. */
describe('the console in Chromium: pages that tell the truth', function () {
  this.timeout(60_000);
  const c = consoleInBrowser();
  const widths = [1366, 390];
  /** A time written relative to now, a moment ago (pages here take a few seconds on a busy machine). */
  const RECENT = /^(just now|\d+ seconds? ago)$/;

  /** The text of a fact (a `dt` and its `dd`) in the card titled `card`. */
  const fact = (page: Page, card: string, term: string) =>
    page
      .locator('.card', { has: page.getByRole('heading', { name: card }) })
      .locator(`dt:text-is("${term}") + dd`)
      .innerText();

  it("writes the dashboard's times relative to now, and counts a powered-off scribe's queued work apart from the backlog", async () => {
    await c.h.services.scribes.create({ organizationId: c.t.organizationId, slug: 'dormant', name: 'Dormant', state: 'powered_off' });
    const chat = await fetch(`${c.base}/api/v1/scribes/dormant/chat`, {
      method: 'POST',
      headers: { 'X-Api-Key': c.t.key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ message: 'Anyone there?' }),
    });
    expect(chat.status).to.equal(202);
    for (const width of widths) {
      const page = await c.newPage(width);
      // Ticked just before: a worker that has not ticked for 10 s is shown as not ticking.
      await c.h.services.dispatcher.tick();
      await c.h.services.runtime.tick();
      await page.goto(`${c.base}/`);
      expect(await fact(page, 'Dispatcher', 'Last tick')).to.match(RECENT);
      expect(await fact(page, 'Agent runtime', 'Last tick')).to.match(RECENT);
      expect(await fact(page, 'Agent runtime', 'Backlog')).to.equal('0 sessions, 0 tasks (0 running)');
      expect(await fact(page, 'Agent runtime', 'Waiting for a powered-off scribe')).to.equal('1 session, 0 tasks (starts when the scribe is powered on)');
      expect(await overflowsSideways(page), `dashboard at ${width} px`).to.equal(false);
      await c.shot(`dashboard-truths-${width}`, page);
      await page.close();
    }
  });

  it("records who ran a schedule now, a staff member or the admin CLI, and shows the run as the schedule's last fire", async () => {
    const schedule = await c.h.services.schedules.create(staffOf(c.t), 'atlas', {
      cron: '0 9 * * 1-5',
      timezone: 'Europe/Berlin',
      title: 'Morning brief',
      summary: 'Summarize yesterday',
    });
    const { page } = c;
    await page.goto(`${c.base}/schedules`);
    const row = page.locator('tr', { hasText: 'Morning brief' });
    expect(await row.locator('td').nth(4).innerText()).to.equal('—');
    await page.goto(`${c.base}/schedules/${schedule.id}`);
    await page.getByRole('button', { name: 'Run now' }).click();
    await expectText(page.locator('.flash-notice'), 'Submitted receipt');
    await expectText(page.locator('main table'), 'run now by admin@example.com');
    expect(await page.locator('dt:text-is("Last fire") + dd').innerText()).to.match(RECENT);
    // As `schedule run-now` runs it.
    await c.h.services.schedules.runNow(operatorActor(c.t.organizationId), schedule.id);
    for (const width of widths) {
      const on = await c.newPage(width);
      await on.goto(`${c.base}/schedules/${schedule.id}`);
      const notes = await on.locator('main table tbody tr td:last-child').allInnerTexts();
      expect(notes.map((n) => n.trim())).to.deep.equal(['run now from the admin CLI', 'run now by admin@example.com']);
      await on.goto(`${c.base}/schedules`);
      expect(await on.locator('tr', { hasText: 'Morning brief' }).locator('td').nth(4).innerText()).to.match(RECENT);
      expect(await overflowsSideways(on), `schedules at ${width} px`).to.equal(false);
      await on.close();
    }
  });

  it('shows each entry type id on the Entries page and its own page, selected whole in one click', async () => {
    const type = await c.h.services.entryTypes.create(c.t.organizationId, { name: 'Company', fields: [{ name: 'Name', type: 'text', primary: true }] });
    for (const width of widths) {
      const page = await c.newPage(width);
      await page.goto(`${c.base}/entry-types`);
      const id = page.locator('tr', { hasText: 'Company' }).locator('.id-text');
      expect(await id.innerText()).to.equal(type.id);
      await id.click();
      expect(await page.evaluate(() => String(window.getSelection()))).to.equal(type.id);
      expect(await overflowsSideways(page), `entry types at ${width} px`).to.equal(false);
      await page.goto(`${c.base}/entry-types/${type.id}`);
      await expectText(page.locator('main'), `GET /api/v1/entry_types/${type.id}/entries`);
      expect(await overflowsSideways(page), `an entry type at ${width} px`).to.equal(false);
      await c.shot(`entry-type-id-${width}`, page);
      await page.close();
    }
  });

  it('keeps the status column of every list in view on a phone, and in its place at 1366 px', async () => {
    await c.api('POST', '/scribes/atlas/requests', { task: { title: 'A receipt with a rather long title that makes its table wider than a phone', summary: 'x' } });
    await c.api('POST', '/scribes/atlas/chat', { message: 'A first message long enough to widen the list of sessions on a phone' });
    await c.h.services.dispatcher.tick();
    await c.h.services.schedules.create(staffOf(c.t), 'atlas', { cron: '*/5 * * * *', summary: 'Every five minutes, a summary that widens the table' });
    for (const width of widths) {
      const page = await c.newPage(width);
      for (const route of ['/receipts', '/tasks', '/sessions', '/schedules']) {
        await page.goto(`${c.base}${route}`);
        const cells = page.locator('main tbody td.status-col');
        expect(await cells.count(), route).to.be.greaterThan(0);
        // Each status cell is on screen and is what the reader sees at its centre (nothing scrolled over it).
        const seen = await cells.evaluateAll((tds) =>
          tds.map((td) => {
            // Scrolled down to it (the page only: the table's own box stays where it is).
            window.scrollBy(0, td.getBoundingClientRect().top - 100);
            const box = td.getBoundingClientRect();
            const top = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
            return box.left >= 0 && box.right <= window.innerWidth && td.contains(top);
          }),
        );
        expect(seen.every(Boolean), `${route} at ${width} px`).to.equal(true);
        const position = await cells.first().evaluate((td) => getComputedStyle(td).position);
        expect(position, `${route} at ${width} px`).to.equal(width < 700 ? 'sticky' : 'static');
      }
      await c.shot(`schedules-status-${width}`, page);
      await page.close();
    }
  });

  it("titles a session by its first message, and shows staff's replies apart from the client's messages", async () => {
    const { session_id: id } = await c.api('POST', '/scribes/atlas/chat', { message: 'What did Acme order last quarter?' });
    await c.h.services.runtime.tick();
    await c.h.services.sessions.replyAsStaff(staffOf(c.t), id, 'A colleague here: I will look it up.');
    for (const width of widths) {
      const page = await c.newPage(width);
      await page.goto(`${c.base}/sessions/${id}`);
      expect(await page.getByRole('heading', { level: 1 }).innerText()).to.equal('What did Acme order last quarter?');
      expect(await page.title()).to.equal('What did Acme order last quarter? · Scribe');
      await expectText(page.locator('main'), `Session ${id} with atlas`);
      const background = (author: string) =>
        page
          .locator(`.msg-${author}`)
          .first()
          .evaluate((li) => getComputedStyle(li).backgroundColor);
      expect(await background('staff')).to.not.equal(await background('user'));
      expect(await page.locator('.msg-staff .msg-author').innerText()).to.match(/^staff$/i);
      expect(await overflowsSideways(page), `a session at ${width} px`).to.equal(false);
      await c.shot(`session-titled-${width}`, page);
      await page.close();
    }
  });
});
