import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { signIn, type ConsoleClient } from '../helpers/console.js';

describe('console: channels', () => {
  let h: Harness;
  let t: Tenant;
  let admin: ConsoleClient;
  let viewer: ConsoleClient;
  before(async () => {
    h = await createHarness({ options: { dispatchOnAccept: false, runOnNewWork: false } });
    t = await h.tenant();
    admin = await signIn(h, t, 'admin');
    viewer = await signIn(h, t, 'viewer');
  });
  after(() => h.close());

  const secretOn = (html: string) => /<code class="key" id="new-secret">([^<]+)<\/code>/.exec(html)?.[1];
  const urlOn = (html: string) => /<span class="mono wrap" id="channel-url">([^<]+)<\/span>/.exec(html)![1]!;
  const idOn = (html: string) => /action="\/channels\/([0-9a-f-]{36})\/disable"/.exec(html)![1]!;

  it('creates a webhook channel, shows its URL and its secret once, and lists it', async () => {
    const res = await admin.post(`/b/${t.scribe.slug}/channels`, { kind: 'webhook', mode: 'task', name: 'Support form', verify: 'hmac-sha256', secret: '', address: '' });
    expect(res.status).to.equal(200);
    expect(res.headers['cache-control']).to.equal('no-store');
    const secret = secretOn(res.text);
    expect(secret).to.match(/^[0-9a-f]{64}$/);
    const url = urlOn(res.text);
    expect(url).to.match(/^http:\/\/127\.0\.0\.1(:\d+)?\/inbound\/[A-Za-z0-9_-]{32}$/);
    const id = idOn(res.text);

    const again = await admin.get(`/channels/${id}`);
    expect(again.text).to.include('Support form').and.include(new URL(url).pathname);
    expect(secretOn(again.text)).to.equal(undefined);
    expect(again.text).not.to.include(secret!);
    expect((await admin.get('/channels')).text)
      .to.include(`/channels/${id}`)
      .and.include('Support form');
    expect((await admin.get(`/b/${t.scribe.slug}/settings`)).text).to.include(`/channels/${id}`);
  });

  it('refuses a bad form with 422 and the reason, keeping what was typed', async () => {
    const res = await admin.post(`/b/${t.scribe.slug}/channels`, { kind: 'email', mode: 'task', name: 'Mailbox', address: 'not-an-address' });
    expect(res.status).to.equal(422);
    expect(res.text).to.include('<p class="flash flash-error" role="alert">Address must be an email address, like atlas@inbound.example.com</p>');
    expect(res.text).to.include('value="Mailbox"').and.include('value="not-an-address"');
  });

  it("lists a channel's deliveries, each linked to the receipt it made or with the reason it was refused; the receipt links back", async () => {
    const res = await admin.post(`/b/${t.scribe.slug}/channels`, { kind: 'webhook', mode: 'task', name: 'Signed hook', verify: 'github' });
    const secret = secretOn(res.text)!;
    const path = new URL(urlOn(res.text)).pathname;
    const id = idOn(res.text);
    const body = '{"summary":"Look into ticket 7"}';
    const made = await h.api
      .post(path)
      .type('json')
      .set('X-Hub-Signature-256', `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`)
      .send(body);
    await h.api.post(path).type('json').set('X-Hub-Signature-256', 'sha256=deadbeef').send(body).expect(401);

    const page = await admin.get(`/channels/${id}`);
    expect(page.text).to.include(`href="/receipts/${made.body.request_id}"`);
    expect(page.text).to.include('signature does not match');
    expect(page.text).to.include('badge-ok">created').and.include('badge-bad">refused');
    const receipt = await admin.get(`/receipts/${made.body.request_id}`);
    expect(receipt.text).to.include(`Received through the channel <a href="/channels/${id}">Signed hook</a>`);
  });

  it('links a session started by a chat channel back to it', async () => {
    const res = await admin.post(`/b/${t.scribe.slug}/channels`, { kind: 'webhook', mode: 'chat', name: 'Chat hook', verify: 'none' });
    const started = await h.api
      .post(new URL(urlOn(res.text)).pathname)
      .type('json')
      .send('{"message":"hello"}');
    const page = await admin.get(`/sessions/${started.body.session_id}`);
    expect(page.text).to.include(`Started through the channel <a href="/channels/${idOn(res.text)}">Chat hook</a>`);
  });

  it('disables and enables a channel, makes a new secret, and leaves viewers only looking', async () => {
    const res = await admin.post(`/b/${t.scribe.slug}/channels`, { kind: 'webhook', mode: 'task', verify: 'slack' });
    const id = idOn(res.text);
    const path = new URL(urlOn(res.text)).pathname;
    expect((await admin.post(`/channels/${id}/disable`, {})).status).to.equal(303);
    expect((await admin.get(`/channels/${id}`)).text).to.include('Disabled: its URL or address now answers as unknown.');
    expect((await h.api.post(path).type('json').send('{}')).status).to.equal(404);
    expect((await admin.post(`/channels/${id}/enable`, {})).status).to.equal(303);

    const rotated = await admin.post(`/channels/${id}/rotate-secret`, {});
    expect(rotated.status).to.equal(200);
    expect(secretOn(rotated.text))
      .to.match(/^[0-9a-f]{64}$/)
      .and.not.equal(secretOn(res.text));

    expect((await viewer.get(`/channels/${id}`)).text).not.to.include(`/channels/${id}/disable`);
    expect((await viewer.post(`/channels/${id}/disable`, {})).status).to.equal(403);
    // The whole URL lets its holder post work: a viewer sees its token's first characters, no sample.
    const token = path.split('/').at(-1)!;
    const seen = (await viewer.get(`/channels/${id}`)).text;
    expect(urlOn(seen)).to.match(new RegExp(`^http://127\\.0\\.0\\.1:\\d+/inbound/${token.slice(0, 4)}…$`));
    expect(seen).not.to.include(token).and.not.to.include('id="sample-request"');
    expect(seen).to.include('(the whole URL lets its holder post work: admins see it)');
    expect(new URL(urlOn((await admin.get(`/channels/${id}`)).text)).pathname).to.equal(path);
    expect((await viewer.get(`/b/${t.scribe.slug}/channels/new`)).status).to.equal(403);
    const actions = await h.db('audit_events').where({ subject_type: 'channel', subject_id: id }).orderBy('id').pluck('action');
    expect(actions).to.deep.equal(['channel.create', 'channel.disable', 'channel.enable', 'channel.rotate_secret']);
  });

  it('escapes what senders control (sender, reason) and answers 404 for a channel of another organization', async () => {
    const other = await h.tenant({ slug: 'elsewhere' });
    const { channel } = await h.services.channels.create({ type: 'operator', id: null, label: 'admin CLI', organizationId: other.organizationId }, 'elsewhere', {
      kind: 'webhook',
    });
    expect((await admin.get(`/channels/${channel.id}`)).status).to.equal(404);

    const res = await admin.post(`/b/${t.scribe.slug}/channels`, { kind: 'email', mode: 'task', name: '<b>Mail</b>', address: 'desk@inbound.example.com' });
    expect(res.text).to.include('&lt;b&gt;Mail&lt;/b&gt;').and.not.include('<b>Mail</b>');
    expect(res.text).to.include('desk@inbound.example.com');
    const mailbox = (await h.services.channels.emailChannel('desk@inbound.example.com'))!;
    const from = '"<img src=x onerror=alert(1)>" <x@example.org>';
    await h.services.channels.receiveEmail(mailbox, {
      from,
      envelopeFrom: 'x@example.org',
      subject: 'Hi',
      text: 'hello',
      messageId: null,
      bodyFiles: [],
      attachments: [],
      keepFiles: async () => undefined,
    });
    const page = await admin.get(`/channels/${mailbox.id}`);
    expect(page.text).to.include('&lt;img src=x onerror=alert(1)&gt;').and.not.include('<img src=x');
  });
});
