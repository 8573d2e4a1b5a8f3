import { expect } from 'chai';
import { consoleInBrowser, expectText, overflowsSideways } from '../helpers/browser.js';

/** The Users page in a real Chromium: inviting, and the invitation accepted in another browser. */
describe('the Users page in Chromium', function () {
  this.timeout(60_000);
  const c = consoleInBrowser();

  before(async () => {
    await c.h.services.users.create({ organizationId: c.t.organizationId, email: 'a.viewer.with.a.rather.long.address@example.com', password: 'viewer password', role: 'viewer' });
  });

  it('invites a user at 1366 px, and the invitation sets a password and signs them in in a second browser context', async () => {
    const page = await c.newPage(1366);
    await page.goto(`${c.base}/users`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Users');
    await page.getByRole('form', { name: 'Invite a user' }).getByLabel('Email').fill('newcomer@example.com');
    await page.getByRole('form', { name: 'Invite a user' }).getByLabel('Role').selectOption('viewer');
    await page.getByRole('button', { name: 'Invite', exact: true }).click();
    await expectText(page.locator('[role="status"]'), 'Invitation for newcomer@example.com.');
    const link = (await page.locator('#new-link').textContent())!;
    expect(link).to.match(/^\/invite\/[A-Za-z0-9_-]{43}$/);
    await expectText(page.locator('tr', { hasText: 'newcomer@example.com' }), 'invited');
    expect(await overflowsSideways(page)).to.equal(false);
    await c.shot('users-1366', page);

    // Someone else's browser: no cookies of the admin's.
    const context = await c.browser.newContext({ viewport: { width: 390, height: 800 } });
    try {
      const invitee = await context.newPage();
      await invitee.goto(`${c.base}${link}`);
      expect(await invitee.getByRole('heading', { level: 1 }).textContent()).to.equal('Welcome to Scribe');
      await c.shot('invite-390', invitee);
      await invitee.getByLabel('New password').fill('newcomer password');
      await invitee.getByLabel('The same password again').fill('newcomer password');
      await invitee.getByRole('button', { name: 'Set password and sign in' }).click();
      await invitee.waitForURL(`${c.base}/`);
      expect(await invitee.getByRole('heading', { level: 1 }).textContent()).to.equal('Dashboard');
      await expectText(invitee.locator('.who'), 'newcomer@example.com');

      await invitee.goto(`${c.base}${link}`);
      await expectText(invitee.locator('main'), 'This link was already used.');
    } finally {
      await context.close();
    }
    await page.reload();
    expect(await page.locator('tr', { hasText: 'newcomer@example.com' }).locator('.badge').textContent()).to.equal('active');
    await page.close();
  });

  it('shows nothing of the pages read before Sign out on Back, but the sign-in page', async () => {
    const page = await c.newPage(1366);
    await page.goto(`${c.base}/users`);
    await expectText(page.locator('main'), 'a.viewer.with.a.rather.long.address@example.com');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/login$/);
    await page.goBack();
    expect(new URL(page.url()).pathname).to.equal('/login');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Sign in to Scribe');
    expect(await page.locator('main').textContent()).not.to.include('a.viewer.with.a.rather.long.address@example.com');
    await page.close();
  });

  it('fits the page to a phone at 390 px, the table scrolling in its own box', async () => {
    const phone = await c.newPage(390);
    await phone.goto(`${c.base}/users`);
    expect(await phone.getByRole('button', { name: 'Disable a.viewer.with.a.rather.long.address@example.com' }).count()).to.equal(1);
    expect(await overflowsSideways(phone)).to.equal(false);
    await c.shot('users-390', phone);
    await phone.close();
  });
});
