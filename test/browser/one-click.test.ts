import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { consoleInBrowser, expectText, overflowsSideways } from '../helpers/browser.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { newId } from '../../src/lib/ids.js';

const WIDTHS = [1366, 390];
const operator = (organizationId: string) => ({ type: 'operator' as const, id: null, label: 'test', organizationId });

/**
 * What operators reach for, one click away, in Chromium at a laptop's and a phone's width:
 * copy buttons, a webhook delivery's request and answer, replies in Markdown (inert HTML),
 * the trace as a timeline, and "New" on the Schedules and Channels lists.
 */
describe('the console in Chromium: one click away', function () {
  this.timeout(90_000);
  const c = consoleInBrowser({ env: { WEBHOOKS_ALLOW_PRIVATE: 'true' } });
  let receiver: WebhookReceiver;

  before(async () => {
    // A teapot that talks: a header of its own and a body longer than the 4 KiB kept.
    receiver = await startWebhookReceiver(() => ({ status: 418, headers: { 'x-teapot': 'short and stout' }, body: 'T'.repeat(5000) }));
  });
  after(async () => receiver?.close());

  /** A page `width` px wide that may use the clipboard, and that records CSP violations, console errors and dialogs. */
  async function watchedPage(width: number): Promise<{ page: Page; problems: string[] }> {
    const page = await c.newPage(width);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: c.base });
    const problems: string[] = [];
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (event) => console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`));
    });
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('dialog', (dialog) => {
      problems.push(`dialog: ${dialog.message()}`);
      void dialog.dismiss();
    });
    return { page, problems };
  }

  it('copies a channel\'s URL and its sample request by keyboard, saying "Copied" on the button', async () => {
    const { channel } = await c.h.services.channels.create(operator(c.t.organizationId), 'atlas', { kind: 'webhook', verify: 'none', mode: 'task' });
    for (const width of WIDTHS) {
      const { page, problems } = await watchedPage(width);
      await page.goto(`${c.base}/channels/${channel.id}`);
      const url = await page.locator('#channel-url').textContent();
      expect(url).to.equal(`${c.base}/inbound/${channel.token}`);
      const copyUrl = page.getByRole('button', { name: "Copy the channel's URL" });
      await copyUrl.focus();
      await page.keyboard.press('Enter');
      await expectText(copyUrl, 'Copied');
      expect(await page.evaluate(() => navigator.clipboard.readText())).to.equal(url);

      const sample = await page.locator('#sample-request').textContent();
      expect(sample).to.contain(`curl -X POST '${url}'`).and.contain('"summary":"Call back Ms. Ito about invoice 1042"');
      const copySample = page.getByRole('button', { name: 'Copy the sample request' });
      await copySample.focus();
      await page.keyboard.press('Space');
      await expectText(copySample, 'Copied');
      expect(await page.evaluate(() => navigator.clipboard.readText())).to.equal(sample);
      expect(await overflowsSideways(page), `${width} px`).to.equal(false);
      expect(problems).to.deep.equal([]);
      await c.shot(`copy-channel-${width}`, page);
      await page.close();
    }
  });

  it('shows a copy button beside a new webhook secret, and the copied secret is the one shown', async () => {
    const { page } = await watchedPage(1366);
    await page.goto(`${c.base}/webhooks/new`);
    await page.getByLabel('URL').fill(`${receiver.url}/made-here`);
    // Said apart, should it fail: the server not answering, answering otherwise, or the page not showing the secret.
    const answer = page.waitForResponse((r) => r.url() === `${c.base}/webhooks` && r.request().method() === 'POST');
    await page.getByRole('button', { name: /Create/ }).click();
    expect((await answer).status(), 'POST /webhooks').to.equal(200);
    await expectText(page.locator('.flash'), 'Endpoint created.');
    const secret = await page.locator('#new-secret').textContent();
    expect(secret).to.match(/^whsec_/);
    await page.getByRole('button', { name: 'Copy the signing secret' }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).to.equal(secret);
    await page.close();
  });

  it("opens a delivery from the endpoint's list: the request with its signature but no secret, and the answer's status, headers and first 4 KiB", async () => {
    const { endpoint, secret } = await c.h.services.webhooks.create(operator(c.t.organizationId), { url: `${receiver.url}/hooks` });
    await c.h.services.webhooks.sendTest(operator(c.t.organizationId), endpoint.id);
    await c.h.services.webhookWorker.tick();
    await receiver.waitFor(1);
    const sent = receiver.received.at(-1)!;
    for (const width of WIDTHS) {
      const { page, problems } = await watchedPage(width);
      await page.goto(`${c.base}/webhooks/${endpoint.id}`);
      await page.locator('#deliveries a[href*="/deliveries/"]').first().click();
      await page.waitForURL(/\/deliveries\//);
      const requestHeaders = Object.fromEntries(
        await page.locator('#request-headers tr').evaluateAll((rows) => rows.map((row) => [row.querySelector('th')!.textContent, row.querySelector('td')!.textContent])),
      );
      expect(requestHeaders).to.deep.include({
        'webhook-id': sent.headers['webhook-id'],
        'webhook-signature': sent.headers['webhook-signature'],
        'content-type': 'application/json',
      });
      expect(JSON.parse((await page.locator('#request-body').textContent())!)).to.deep.equal(JSON.parse(sent.body));
      expect(await page.locator('#response-status').textContent()).to.equal('418');
      expect(await page.locator('#response-headers').textContent())
        .to.contain('x-teapot')
        .and.contain('short and stout');
      expect(await page.locator('#response-body').textContent()).to.equal('T'.repeat(4096));
      expect(await page.content()).not.to.contain(secret.slice('whsec_'.length));
      expect(await overflowsSideways(page), `${width} px`).to.equal(false);
      expect(problems).to.deep.equal([]);
      await c.shot(`webhook-delivery-${width}`, page);
      await page.close();
    }
  });

  it('renders a reply as Markdown, with its script, image, javascript: link and raw HTML inert text and no CSP violation', async () => {
    const id = newId();
    const at = new Date().toISOString();
    await c.h
      .db('sessions')
      .insert({ id, organization_id: c.t.organizationId, scribe_id: c.t.scribe.id, state: 'waiting', reply_due: false, attempts: 0, created_at: at, updated_at: at });
    const reply = [
      'Here is what I found:',
      '',
      '- the **first** point',
      '- `npm test` runs it',
      '',
      '```',
      'const answer = 42;',
      '```',
      '',
      '<script>alert("script")</script> <img src=x onerror="alert(\'img\')"> <b>raw</b>',
      '',
      '[click me](javascript:alert("link")) and [the docs](https://example.com/docs) and receipt req_01JABCDEFGHJKMNPQRSTVWXYZ0',
      '',
      '| Item | Amount |',
      '|:--|--:|',
      '| Tea | 4.50 |',
    ].join('\n');
    await c.h.db('session_messages').insert([
      { session_id: id, author: 'user', text: 'What did you find?', created_at: at },
      { session_id: id, author: 'scribe', text: reply, created_at: at },
    ]);
    for (const width of WIDTHS) {
      const { page, problems } = await watchedPage(width);
      await page.goto(`${c.base}/sessions/${id}`);
      const text = page.locator('.msg-scribe .msg-text');
      expect(await text.locator('li').allTextContents()).to.deep.equal(['the first point', 'npm test runs it']);
      expect(await text.locator('pre code').textContent()).to.equal('const answer = 42;\n');
      expect(await text.locator('script, img, b').count()).to.equal(0);
      expect(await text.textContent())
        .to.contain('<script>alert("script")</script>')
        .and.contain('<img src=x onerror="alert(\'img\')">')
        .and.contain('<b>raw</b>')
        .and.contain('[click me](javascript:alert("link"))');
      expect(await text.locator('a').evaluateAll((links) => links.map((a) => [a.textContent, a.getAttribute('href')]))).to.deep.equal([
        ['the docs', 'https://example.com/docs'],
        ['req_01JABCDEFGHJKMNPQRSTVWXYZ0', '/receipts/req_01JABCDEFGHJKMNPQRSTVWXYZ0'],
      ]);
      // A table's number column to the right, within the CSP (no inline style).
      expect(await text.locator('td').evaluateAll((cells) => cells.map((td) => getComputedStyle(td).textAlign))).to.deep.equal(['left', 'right']);
      await page.waitForTimeout(100);
      expect(problems).to.deep.equal([]);
      expect(await overflowsSideways(page), `${width} px`).to.equal(false);
      await c.shot(`markdown-reply-${width}`, page);
      await page.close();
    }
  });

  it("draws the trace as a timeline: each call a bar at its start, and a wait for the endpoint's back-pressure marked", async () => {
    const id = newId();
    const run = newId();
    const t0 = Date.parse('2026-11-24T09:00:00.000Z');
    await c.h.db('sessions').insert({
      id,
      organization_id: c.t.organizationId,
      scribe_id: c.t.scribe.id,
      state: 'waiting',
      reply_due: false,
      attempts: 0,
      created_at: new Date(t0).toISOString(),
      updated_at: new Date(t0).toISOString(),
    });
    const call = (position: number, kind: 'model' | 'tool', name: string, endMs: number, durationMs: number, error: string | null = null) => ({
      organization_id: c.t.organizationId,
      scribe_id: c.t.scribe.id,
      task_id: null,
      session_id: id,
      run_id: run,
      position,
      kind,
      name,
      arguments: null,
      result: null,
      duration_ms: durationMs,
      error,
      input_tokens: null,
      output_tokens: null,
      created_at: new Date(t0 + endMs).toISOString(),
    });
    // 0–4 s: a model call that waited 3 s at the gate after a 429; 4–6 s the call again; 6–7 s a tool; 7–10 s the last model call.
    await c.h
      .db('agent_calls')
      .insert([
        call(0, 'model', 'gpt-test', 4000, 4000, 'the model endpoint answered HTTP 429; waited 3.0 s as it asked'),
        call(1, 'model', 'gpt-test', 6000, 2000),
        call(2, 'tool', 'search_entries', 7000, 1000),
        call(3, 'model', 'gpt-test', 10_000, 3000),
      ]);
    for (const width of WIDTHS) {
      const { page, problems } = await watchedPage(width);
      await page.goto(`${c.base}/sessions/${id}`);
      await expectText(page.locator('#timeline-heading'), '10,000 ms');
      const bars = await page
        .locator('#trace-timeline rect')
        .evaluateAll((rects) => rects.map((r) => [r.getAttribute('class'), Number(r.getAttribute('x')), Number(r.getAttribute('width'))]));
      expect(bars).to.deep.equal([
        ['bar bar-model', 0, 100],
        ['bar bar-wait', 100, 300],
        ['bar bar-model', 400, 200],
        ['bar bar-tool', 600, 100],
        ['bar bar-model', 700, 300],
      ]);
      expect(await page.locator('#trace-timeline svg').first().getAttribute('aria-label')).to.equal('model call gpt-test: 4,000 ms, of which 3,000 ms waiting for the endpoint');
      const lane = await page.locator('#trace-timeline svg').first().boundingBox();
      expect(lane!.width).to.be.greaterThan(width === 390 ? 100 : 500);
      expect(await overflowsSideways(page), `${width} px`).to.equal(false);
      expect(problems).to.deep.equal([]);
      await c.shot(`trace-timeline-${width}`, page);
      await page.close();
    }
  });

  it('offers "New" on the Schedules and Channels lists: one scribe goes straight to its form, several to a menu of them', async () => {
    for (const width of WIDTHS) {
      const { page } = await watchedPage(width);
      await page.goto(`${c.base}/channels`);
      await page.getByRole('link', { name: 'New channel' }).click();
      await page.waitForURL(`${c.base}/b/atlas/channels/new`);
      await page.close();
    }
    await c.h.services.scribes.create({ organizationId: c.t.organizationId, slug: 'boreas', name: 'Boreas' });
    for (const width of WIDTHS) {
      const { page } = await watchedPage(width);
      for (const [list, noun] of [
        ['schedules', 'schedule'],
        ['channels', 'channel'],
      ]) {
        await page.goto(`${c.base}/${list}`);
        await page.locator('summary', { hasText: `New ${noun}` }).click();
        await page.getByRole('link', { name: 'for Boreas' }).click();
        await page.waitForURL(`${c.base}/b/boreas/${list}/new`);
        expect(await page.getByRole('heading', { level: 1 }).textContent()).to.contain(`New ${noun}`);
      }
      await page.close();
    }
  });
});
