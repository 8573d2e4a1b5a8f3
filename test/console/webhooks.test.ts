import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { signIn, type ConsoleClient } from '../helpers/console.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

describe('console: webhooks', () => {
  let h: Harness;
  let t: Tenant;
  let admin: ConsoleClient;
  let viewer: ConsoleClient;
  let receiver: WebhookReceiver;
  let failing = true;
  before(async () => {
    h = await createHarness({ env: { WEBHOOKS_ALLOW_PRIVATE: 'true' }, options: { dispatchOnAccept: false, runOnNewWork: false } });
    t = await h.tenant();
    admin = await signIn(h, t, 'admin');
    viewer = await signIn(h, t, 'viewer');
    receiver = await startWebhookReceiver(() => (failing ? { status: 500, body: 'receiver is down' } : { status: 200, body: 'thanks' }));
  });
  after(async () => {
    await receiver.close();
    await h.close();
  });

  const secretOn = (html: string) => /<code class="key" id="new-secret">([^<]+)<\/code>/.exec(html)?.[1];
  const idOn = (html: string) => /action="\/webhooks\/([0-9a-f-]{36})\/test"/.exec(html)![1]!;

  it('creates an endpoint, shows its secret once, lists it, and lets a viewer read but not change it', async () => {
    const res = await admin.post('/webhooks', { url: `${receiver.url}/events`, description: 'Billing', events: ['request.fulfilled', 'request.failed'] });
    expect(res.status).to.equal(200);
    expect(res.headers['cache-control']).to.equal('no-store');
    const secret = secretOn(res.text)!;
    expect(secret).to.match(/^whsec_/);
    const id = idOn(res.text);
    const again = await admin.get(`/webhooks/${id}`);
    expect(again.text).to.include('request.fulfilled, request.failed').and.include('Billing');
    expect(again.text).not.to.include(secret);
    expect((await admin.get('/webhooks')).text).to.include(`/webhooks/${id}`);
    expect((await viewer.get(`/webhooks/${id}`)).status).to.equal(200);
    expect((await viewer.post(`/webhooks/${id}/disable`, {})).status).to.equal(403);
    const stored = await h.db('webhook_endpoints').where({ id }).first();
    expect(JSON.parse(stored.events)).to.deep.equal(['request.fulfilled', 'request.failed']);
  });

  it('refuses a bad form with 422 and the reason, keeping what was typed', async () => {
    const res = await admin.post('/webhooks', { url: 'ftp://example.com/x', description: 'Kept' });
    expect(res.status).to.equal(422);
    expect(res.text).to.include('<p class="flash flash-error" role="alert">URL must be an http:// or https:// URL without credentials, at most 2000 characters</p>');
    expect(res.text).to.include('value="ftp://example.com/x"').and.include('value="Kept"');
  });

  it('refuses "All events" unticked with no event ticked, rather than sending every event', async () => {
    const before = Number((await h.db('webhook_endpoints').count({ n: '*' }).first())!.n);
    const res = await admin.post('/webhooks', { url: 'https://example.org/only-none', description: 'None' });
    expect(res.status).to.equal(422);
    expect(res.text).to.include('<p class="flash flash-error" role="alert">Choose at least one event type, or all of them</p>');
    // As typed: "All events" stays unticked.
    expect(res.text).to.include('value="https://example.org/only-none"').and.include('<input type="checkbox" name="all_events"> All events');
    expect(Number((await h.db('webhook_endpoints').count({ n: '*' }).first())!.n)).to.equal(before);
  });

  it('edits, tests, shows deliveries with filters, and redelivers the failed ones of a time range after a preview', async () => {
    const id = idOn((await admin.post('/webhooks', { url: receiver.url, all_events: 'on' })).text);
    const saved = await admin.post(`/webhooks/${id}`, { url: `${receiver.url}/v2`, description: 'Renamed', events: ['session.failed'] });
    expect(saved.status).to.equal(303);
    expect((await admin.get(`/webhooks/${id}`)).text)
      .to.include(`${receiver.url}/v2`)
      .and.include('session.failed');

    expect((await admin.post(`/webhooks/${id}/test`, {})).status).to.equal(303);
    await h.services.webhookWorker.tick();
    const page = await admin.get(`/webhooks/${id}`);
    expect(page.text).to.include('webhook.test').and.include('receiver is down').and.include('badge-busy">pending');
    expect((await admin.get(`/webhooks/${id}?status=delivered`)).text).not.to.include('receiver is down');

    // Failed for good (as after the retry schedule), then redelivered in bulk after the preview.
    await h.db('webhook_deliveries').where({ endpoint_id: id }).update({ status: 'failed' });
    const from = new Date(Date.now() - 3_600_000).toISOString().slice(0, 16);
    const to = new Date(Date.now() + 3_600_000).toISOString().slice(0, 16);
    const preview = await admin.get(`/webhooks/${id}/redeliver-failed?from=${from}&to=${to}`);
    expect(preview.text).to.match(/<p id="redeliver-count">1 failed delivery made from/);
    const form = /name="from" value="([^"]+)"[\s\S]*name="to" value="([^"]+)"/.exec(preview.text)!;
    failing = false;
    expect((await admin.post(`/webhooks/${id}/redeliver-failed`, { from: form[1]!, to: form[2]! })).status).to.equal(303);
    await h.services.webhookWorker.tick();
    const after = await admin.get(`/webhooks/${id}`);
    expect(after.text).to.include('badge-ok">delivered').and.include('thanks');
    expect(after.text).to.include('1 failed delivery queued again.');
  });

  it('rotates the secret (shown once), disables, enables and deletes, each audited', async () => {
    const id = idOn((await admin.post('/webhooks', { url: receiver.url, all_events: 'on' })).text);
    const rotated = await admin.post(`/webhooks/${id}/rotate-secret`, {});
    expect(secretOn(rotated.text)).to.match(/^whsec_/);
    expect(rotated.text).to.include('each delivery carries signatures with both');
    await admin.post(`/webhooks/${id}/disable`, {});
    expect((await admin.get(`/webhooks/${id}`)).text).to.include('badge-idle">disabled');
    await admin.post(`/webhooks/${id}/enable`, {});
    expect((await admin.post(`/webhooks/${id}/delete`, {})).headers.location).to.equal('/webhooks');
    expect((await admin.get(`/webhooks/${id}`)).status).to.equal(404);
    const actions = await h.db('audit_events').where({ subject_type: 'webhook', subject_id: id }).orderBy('id').pluck('action');
    expect(actions).to.deep.equal(['webhook.create', 'webhook.rotate_secret', 'webhook.disable', 'webhook.enable', 'webhook.delete']);
    expect((await admin.get(`/audit?subject_type=webhook&subject_id=${id}`)).text).to.include('webhook.delete');
  });
});
