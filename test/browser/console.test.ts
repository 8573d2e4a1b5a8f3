import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { consoleInBrowser, expectText } from '../helpers/browser.js';
import { PASSWORD } from '../helpers/console.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';
import { startFakeOpenAi } from '../helpers/fake-openai.js';

/**
 * The console in a real Chromium against the real app on loopback. Background work is
 * driven by the test (ticks), so each state can be watched arriving on a page that is
 * not reloaded.
 */
describe('the console in Chromium', function () {
  this.timeout(60_000);
  const c = consoleInBrowser({ env: { WEBHOOKS_ALLOW_PRIVATE: 'true', MODELS_ALLOW_PRIVATE: 'true' } });
  let page: Page;

  before(async () => {
    const type = await c.h.services.entryTypes.create(c.t.organizationId, {
      name: 'Companies',
      fields: [
        { name: 'Name', type: 'text', primary: true },
        { name: 'City', type: 'text' },
      ],
    });
    for (const [name, city] of [
      ['Acme Corp', 'Zurich'],
      ['Globex', 'Geneva'],
      ['Initech', 'Zurich'],
    ]) {
      await c.h.services.entries.create(c.t.organizationId, type.id, { fields: { Name: name, City: city } });
    }
    // A page not yet signed in: the first test signs in through the form.
    page = await c.browser.newPage({ viewport: { width: 1280, height: 900 } });
  });

  const shot = (name: string) => c.shot(name, page);
  /** Marks the window; the mark survives only if the page is not reloaded. */
  const markWindow = () => page.evaluate(() => ((window as unknown as { __mark: number }).__mark = 42));
  const stillSamePage = () => page.evaluate(() => (window as unknown as { __mark?: number }).__mark === 42);

  it('signs in with the form and lands on the dashboard', async () => {
    await page.goto(`${c.base}/`);
    expect(page.url()).to.equal(`${c.base}/login`);
    await shot('login');
    await page.getByLabel('Email').fill('admin@example.com');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${c.base}/`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Dashboard');
    await shot('dashboard');
  });

  it('shows a chat reply on /b/<slug> as it arrives, without reloading', async () => {
    await page.goto(`${c.base}/b/atlas`);
    await markWindow();
    await expectText(page.locator('[data-live-part="sessions"]'), 'No chat sessions yet.');
    const { session_id: sessionId } = await c.api('POST', '/scribes/atlas/chat', { message: 'What do we know about Acme?' });
    // The new session appears (queued), then the scribe's reply once the runtime has worked it.
    await page.locator(`#session-${sessionId}`).waitFor();
    await c.h.services.runtime.tick();
    await page.locator(`#session-${sessionId} .msg-scribe`).waitFor();
    // The reply's Markdown list is shown as a list.
    expect(await page.locator(`#session-${sessionId} .msg-scribe .msg-text p`).textContent()).to.equal('Here is what I found for "acme":');
    expect(await page.locator(`#session-${sessionId} .msg-scribe .msg-text li`).allTextContents()).to.deep.equal(['Acme Corp (Companies)']);
    expect(await stillSamePage(), 'the page was not reloaded').to.equal(true);
    await shot('scribe-page');
  });

  it('shows a receipt reaching fulfilled on its page, without reloading', async () => {
    const { request } = await c.api('POST', '/scribes/atlas/requests', { task: { summary: 'Summarize the Acme account', acceptance_criteria: 'Three bullets' } });
    await page.goto(`${c.base}/receipts/${request.id}`);
    await markWindow();
    expect(await page.locator('.status-line').getAttribute('data-status')).to.equal('accepted');
    await c.h.services.dispatcher.tick();
    await page.locator('.status-line[data-status="fulfilled"]').waitFor();
    expect(await stillSamePage(), 'the page was not reloaded').to.equal(true);
    // The task the receipt made is then worked, and its status follows on the same page.
    await c.h.services.runtime.tick();
    await page.locator('[data-live-part="receipt"] a[href^="/tasks/"] + .badge-ok').waitFor();
    await shot('receipt-page');
  });

  it('asks the server nothing while the page is hidden, and refreshes the moment it is shown again', async () => {
    await page.goto(`${c.base}/`);
    let asked = 0;
    let answered = 0;
    const isRefresh = (request: { headers(): Record<string, string> }) => request.headers()['x-live-refresh'] === '1';
    page.on('request', (request) => void (isRefresh(request) && asked++));
    page.on('requestfinished', (request) => void (isRefresh(request) && answered++));
    await page.waitForRequest(isRefresh);
    // Headless Chromium shows every page, so the test hides this one as a background tab would be.
    const setHidden = (hidden: boolean) =>
      page.evaluate((hidden) => {
        Object.defineProperty(document, 'hidden', { configurable: true, value: hidden });
        Object.defineProperty(document, 'visibilityState', { configurable: true, value: hidden ? 'hidden' : 'visible' });
        document.dispatchEvent(new Event('visibilitychange'));
      }, hidden);
    await setHidden(true);
    // A refresh already on its way when the page was hidden still lands; then nothing more.
    while (answered < asked) await page.waitForTimeout(50);
    const hiddenAt = asked;
    await page.waitForTimeout(4000);
    expect(asked, 'refreshes while hidden (the dashboard asks every 1.5 s when shown)').to.equal(hiddenAt);
    const shown = page.waitForRequest(isRefresh);
    await setHidden(false);
    await shown;
    expect(asked).to.equal(hiddenAt + 1);
  });

  it('searches entries', async () => {
    await page.goto(`${c.base}/entry-types`);
    await page.getByRole('link', { name: 'Companies' }).click();
    await page.getByLabel('Search').fill('City:Zurich');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/q=City%3AZurich/);
    const names = await page.locator('table a[href^="/entries/"]').allTextContents();
    expect(names).to.deep.equal(['Acme Corp', 'Initech']);
    await shot('entries-search');
    await page.getByRole('link', { name: 'Acme Corp' }).click();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Acme Corp');
  });

  it('creates a key, shown once, and revokes it', async () => {
    await page.goto(`${c.base}/keys`);
    await page.getByLabel('Name').fill('Browser key');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await page.locator('#new-key').textContent())!;
    expect(key).to.match(/^sk_[A-Za-z0-9_-]{43}$/);
    expect((await fetch(`${c.base}/api/v1/scribes/atlas/requests`, { headers: { 'X-Api-Key': key } })).status).to.equal(200);
    await shot('key-created');
    // The answer took the list's address: a reload reads the list, without the key, and makes no second one.
    expect(new URL(page.url()).pathname).to.equal('/keys');
    await page.reload();
    expect(await page.locator('#new-key').count(), 'shown only once').to.equal(0);
    expect(await page.getByRole('button', { name: 'Revoke Browser key' }).count(), 'one key made').to.equal(1);
    // Revoking asks first: dismissed, the key still works; accepted, it is revoked.
    const questions: string[] = [];
    page.once('dialog', (dialog) => void (questions.push(dialog.message()), dialog.dismiss()));
    await page.getByRole('button', { name: 'Revoke Browser key' }).click();
    await page.waitForTimeout(200);
    expect(questions).to.deep.equal(['Revoke the key Browser key? Calls with it are refused at once; this cannot be undone.']);
    expect((await fetch(`${c.base}/api/v1/scribes/atlas/requests`, { headers: { 'X-Api-Key': key } })).status).to.equal(200);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Revoke Browser key' }).click();
    await expectText(page.locator('.flash-notice'), 'Key revoked');
    expect((await fetch(`${c.base}/api/v1/scribes/atlas/requests`, { headers: { 'X-Api-Key': key } })).status).to.equal(401);
    await shot('keys');
  });

  it('renders the API reference at /docs from local assets, within the CSP', async () => {
    const problems: string[] = [];
    const docs = await c.browser.newPage();
    docs.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    docs.on('requestfailed', (r) => problems.push(`${r.url()} failed`));
    await docs.goto(`${c.base}/docs`);
    await docs.getByText('Submit a task').waitFor();
    expect(await docs.getByText('/api/v1/entry_types/{entry_type_id}/entries').count()).to.be.greaterThan(0);
    await c.shot('api-docs', docs);
    await docs.close();
    expect(problems).to.deep.equal([]);
  });

  it('creates a schedule with a preview of its fire times, runs it now and shows the fire', async () => {
    await page.goto(`${c.base}/b/atlas`);
    await page.getByRole('navigation', { name: 'Scribe' }).getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('link', { name: 'New schedule' }).click();
    await page.getByLabel('Cron expression').fill('0 9 * * 1-5');
    await page.getByLabel('Time zone').fill('Nowhere/Land');
    await page.getByRole('button', { name: 'Preview' }).click();
    await expectText(page.locator('.preview'), 'Unknown time zone: Nowhere/Land');
    await page.getByLabel('Time zone').fill('Europe/Berlin');
    await page.getByRole('button', { name: 'Preview' }).click();
    await expectText(page.locator('.preview'), 'At 09:00, Monday through Friday');
    expect(await page.locator('.preview .next-fires li').count()).to.equal(5);
    expect(await page.locator('.preview .next-fires li').first().textContent()).to.match(/09:00:00 CET$/);
    await page.getByLabel('Task summary').fill('Summarize the morning mail');
    await page.getByRole('button', { name: 'Create schedule' }).click();
    await expectText(page.locator('.flash-notice'), 'Schedule created.');
    await page.getByRole('button', { name: 'Run now' }).click();
    await expectText(page.locator('.flash-notice'), 'Submitted receipt req_');
    await expectText(page.locator('table'), 'run now by admin@example.com');
    await shot('schedule');
  });

  it('creates a signed webhook channel, shows its secret once, and lists a delivery linked to its receipt', async () => {
    await page.goto(`${c.base}/b/atlas/settings`);
    await page.getByRole('link', { name: 'New channel' }).click();
    await page.getByLabel('Name').fill('Order hook');
    await page.getByLabel('Verification').selectOption('hmac-sha256');
    await page.getByRole('button', { name: 'Create channel' }).click();
    await expectText(page.locator('.flash-notice'), 'Channel created.');
    const secret = (await page.locator('#new-secret').textContent())!;
    const url = (await page.locator('#channel-url').textContent())!;
    expect(url.startsWith(`${c.base}/inbound/`)).to.equal(true);
    const body = JSON.stringify({ summary: 'Ship order 1042', title: 'Order 1042' });
    const sent = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Signature': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}` },
      body,
    });
    expect(sent.status).to.equal(202);
    const { request_id } = (await sent.json()) as { request_id: string };
    await page.goto(`${c.base}/channels`);
    await page.getByRole('link', { name: 'Order hook' }).click();
    await expectText(page.locator('h1'), 'Order hook');
    expect(await page.locator('#new-secret').count(), 'shown only once').to.equal(0);
    await shot('channel');
    await page.getByRole('link', { name: request_id }).click();
    await expectText(page.locator('.origin'), 'Received through the channel Order hook');
  });

  it('creates a webhook endpoint, shows its secret once, sends a test event and shows the delivery and what the receiver answered', async () => {
    const receiver = await startWebhookReceiver(() => ({ status: 200, body: 'received, thank you' }));
    try {
      await page.goto(`${c.base}/webhooks`);
      await page.getByRole('link', { name: 'New endpoint' }).click();
      await page.getByLabel('URL').fill(`${receiver.url}/scribe-events`);
      await page.getByLabel('request.fulfilled').check();
      await page.getByRole('button', { name: 'Create endpoint' }).click();
      await expectText(page.locator('.flash-notice'), 'Endpoint created.');
      expect(await page.locator('#new-secret').textContent()).to.match(/^whsec_/);
      // The answer took the endpoint's address: a reload reads its page, without the secret,
      // rather than sending the form again.
      const endpointPage = new URL(page.url()).pathname;
      expect(endpointPage).to.match(/^\/webhooks\/[0-9a-f-]{36}$/);
      await page.reload();
      expect(await page.locator('#new-secret').count(), 'the secret is shown once').to.equal(0);
      expect(await page.locator('.flash').count(), 'no notice: nothing was sent').to.equal(0);
      await page.getByRole('button', { name: 'Send a test event' }).click();
      await expectText(page.locator('.flash-notice'), 'Sent a test event, evt_');
      await receiver.waitFor(1);
      await page.reload();
      await expectText(page.locator('#deliveries'), 'received, thank you');
      expect(await page.locator('#deliveries .badge').first().textContent()).to.equal('delivered');
      await shot('webhook');
    } finally {
      await receiver.close();
    }
  });

  it("shows a task's trace: each model and tool call, with the tokens used, on the task's page", async () => {
    const fake = await startFakeOpenAi();
    try {
      await c.h.services.scribes.create({ organizationId: c.t.organizationId, slug: 'modeled', name: 'Modeled', agent: 'openai' });
      await c.h.services.scribes.setAgent(c.t.organizationId, 'modeled', { model: 'local-model', baseUrl: fake.baseUrl });
      fake.script(
        { toolCalls: [{ name: 'search_entries', arguments: { query: 'Zurich' } }], usage: { prompt_tokens: 1200, completion_tokens: 40 } },
        { toolCalls: [{ name: 'complete_task', arguments: { result: 'Two companies are in Zurich.' } }], usage: { prompt_tokens: 1500, completion_tokens: 60 } },
      );
      const receipt = await c.api('POST', '/scribes/modeled/requests', { task: { summary: 'Which companies are in Zurich?', acceptance_criteria: 'A count' } });
      await c.h.services.dispatcher.tick();
      await c.h.services.runtime.tick();
      const taskId = (await c.api('GET', `/requests/${receipt.request.id}`)).request.entity_id;
      await page.goto(`${c.base}/tasks/${taskId}`);
      await expectText(page.locator('#trace-totals'), '2 model calls, 2 tool calls, 2,700 input and 100 output tokens');
      const rows = await page.locator('#trace tbody tr').allTextContents();
      expect(rows.map((r) => r.replace(/\s+/g, ' ').trim().split(' ').slice(0, 3).join(' '))).to.deep.equal([
        '1 model local-model',
        '2 tool search_entries',
        '3 model local-model',
        '4 tool complete_task',
      ]);
      await page.locator('#trace summary', { hasText: 'Result' }).first().click();
      await expectText(page.locator('#trace'), 'Acme Corp');
      await shot('task-trace');
    } finally {
      await fake.close();
    }
  });

  it('renders the other main pages', async () => {
    for (const [name, route] of [
      ['scribes', '/scribes'],
      ['receipts', '/receipts'],
      ['tasks', '/tasks'],
      ['entry-types', '/entry-types'],
      ['schedules', '/schedules'],
      ['channels', '/channels'],
      ['webhooks', '/webhooks'],
      ['audit', '/audit'],
    ]) {
      const response = await page.goto(`${c.base}${route}`);
      expect(response?.status(), route).to.equal(200);
      await shot(name!);
    }
  });
});
