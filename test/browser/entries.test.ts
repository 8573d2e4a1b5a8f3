import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { consoleInBrowser, expectText, overflowsSideways } from '../helpers/browser.js';
import type { EntryTypeWithFields } from '../../src/entries/entry-type-service.js';
import { COMPANY_FIELDS } from '../helpers/entries-ui.js';

/** Entries pages and audit subjects in a real Chromium: the picker's script runs under the console's CSP. */
describe('entries and audit subjects in Chromium', function () {
  this.timeout(60_000);
  const c = consoleInBrowser({ env: { READ_THREADS: '2' } });
  let page: Page;
  let companies: EntryTypeWithFields;
  let people: EntryTypeWithFields;
  const problems: string[] = [];

  before(async () => {
    const org = c.t.organizationId;
    companies = await c.h.services.entryTypes.create(org, { name: 'Companies', fields: COMPANY_FIELDS });
    people = await c.h.services.entryTypes.create(org, {
      name: 'People',
      fields: [
        { name: 'Name', type: 'text', primary: true },
        { name: 'Employer', type: 'relationship', target: companies.id },
      ],
    });
    await c.h.services.entries.create(org, companies.id, {
      fields: {
        Name: 'Acme Corp',
        Employees: 1250,
        Public: true,
        Founded: '1999-03-07',
        Notes: 'Long-standing client in Zurich with offices across Europe and a yearly contract renewed each spring.',
      },
    });
    await c.h.services.entries.create(org, companies.id, { fields: { Name: 'Globex', Employees: 80, Public: false, Founded: '2004-11-23' } });
    for (let i = 0; i < 300; i++) await c.h.services.entries.create(org, companies.id, { fields: { Name: `Vendor ${String(i).padStart(3, '0')}`, Employees: i } });
    page = c.page;
    // Anything the CSP blocks, or a script error, is reported on the console.
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));
  });

  it('lists every field as a column, booleans as ticks', async () => {
    await page.goto(`${c.base}/entry-types/${companies.id}`);
    expect(await page.locator('.entries-table thead th').allTextContents()).to.deep.equal(['Name', 'Employees', 'Public', 'Founded', 'Notes', 'Flags', 'Updated']);
    const acme = page.locator('.entries-table tbody tr', { hasText: 'Acme Corp' });
    expect(await acme.locator('td').nth(1).textContent()).to.equal('1,250');
    expect(await acme.locator('td.bool .tick').textContent()).to.equal('✓');
    expect(await acme.locator('td.bool').textContent()).to.equal('✓yes');
    expect(await acme.locator('td').nth(3).textContent()).to.equal('7 Mar 1999');
    const globex = page.locator('.entries-table tbody tr', { hasText: 'Globex' });
    expect(await globex.locator('td.bool .tick').count()).to.equal(0);
    expect(await globex.locator('td.bool').textContent()).to.equal('—no');
    // The tick is read out as "yes" (the mark itself is hidden from screen readers).
    expect(await acme.locator('td.bool [aria-hidden="true"]').textContent()).to.equal('✓');
    expect(await acme.locator('td.bool .visually-hidden').textContent()).to.equal('yes');
    await c.shot('entries-list');
  });

  it('finds an entry among hundreds by typing in the picker, saves the link, and the linked entry shows the backlink', async () => {
    await page.goto(`${c.base}/entry-types/${people.id}/new`);
    await page.getByLabel('Name').fill('Hank');
    const box = page.getByRole('combobox', { name: 'Employer' });
    await box.pressSequentially('vendor 27', { delay: 20 });
    const options = page.getByRole('option');
    await expectText(options, 'Vendor 279');
    expect(await options.allTextContents()).to.deep.equal(Array.from({ length: 10 }, (_, i) => `Vendor 27${i}`));
    expect(await box.getAttribute('aria-expanded')).to.equal('true');
    await c.shot('entries-picker-open');
    await box.pressSequentially('1', { delay: 20 });
    await page.waitForFunction(() => document.querySelectorAll('[role="option"]').length === 1);
    await box.press('ArrowDown');
    expect(await page.getByRole('option', { name: 'Vendor 271' }).getAttribute('aria-selected')).to.equal('true');
    await box.press('Enter');
    expect(await page.getByRole('checkbox', { name: 'Vendor 271' }).isChecked()).to.equal(true);
    expect(await box.inputValue()).to.equal('');
    expect(await page.getByRole('listbox').isHidden()).to.equal(true);
    await c.shot('entries-picker-picked');

    await page.getByRole('button', { name: 'Create entry' }).click();
    await expectText(page.locator('.flash-notice'), 'Entry created.');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Hank');
    await page.getByRole('link', { name: 'Vendor 271' }).click();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Vendor 271');
    expect(await page.locator('#linked-from-count').textContent()).to.equal('1 entry links here.');
    const row = page.locator('#linked-from tbody tr');
    expect(await row.locator('td').allTextContents()).to.deep.equal(['Hank', 'People', 'Employer']);
    await c.shot('entries-linked-from');
    await row.getByRole('link', { name: 'Hank' }).click();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Hank');
  });

  it("links an audit event's subject by its name", async () => {
    await page.goto(`${c.base}/audit?action=entry.create`);
    const subject = page.locator('td.subject').first().getByRole('link', { name: 'Hank' });
    await subject.click();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Hank');
    await page.goto(`${c.base}/audit`);
    await c.shot('audit-subjects');
  });

  it('keeps a phone-wide entries list from scrolling the page sideways: the table scrolls in its own box', async () => {
    const phone = await c.newPage(390);
    await phone.goto(`${c.base}/entry-types/${companies.id}`);
    // The box or, at phone widths, the table itself (console.css makes tables scroll there).
    const scrollsInside = await phone.locator('.entries-scroll').evaluate((box) => [box, box.querySelector('table')!].some((el) => el.scrollWidth > el.clientWidth));
    expect(scrollsInside, 'the table is wider than the phone and scrolls in its box').to.equal(true);
    expect(await overflowsSideways(phone)).to.equal(false);
    await c.shot('entries-list-phone', phone);
    await phone.close();
  });

  it('ran without script errors or CSP refusals', () => {
    expect(problems).to.deep.equal([]);
  });
});
