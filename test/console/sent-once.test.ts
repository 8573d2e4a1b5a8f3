import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { signIn, type ConsoleClient } from '../helpers/console.js';

/**
 * Forms answered with a page that shows a secret once (not redirected, so that the secret is
 * stored nowhere): sent again with the same `_once` token, as a reload or Back and Forward do,
 * they make nothing and go to what the first sending made.
 */
describe('console: forms that show a secret, sent again', () => {
  let h: Harness;
  let t: Tenant;
  let admin: ConsoleClient;
  before(async () => {
    h = await createHarness({ options: { dispatchOnAccept: false, runOnNewWork: false } });
    t = await h.tenant();
    admin = await signIn(h, t, 'admin');
  });
  after(() => h.close());

  /** The `_once` token of the form posting to `action` on the page at `path`. */
  const onceOn = async (path: string, action: string): Promise<string> => {
    const html = (await admin.get(path)).text;
    const form = html.slice(html.indexOf(`action="${action}"`));
    const token = /name="_once" value="([0-9a-f-]{36})"/.exec(form.slice(0, form.indexOf('</form>')))?.[1];
    expect(token, `a _once field in the form to ${action} on ${path}`).to.be.a('string');
    return token!;
  };
  const audited = async (action: string) => Number((await h.db('audit_events').where({ action }).count({ n: '*' }).first())!.n);
  const count = async (table: string) => Number((await h.db(table).where({ organization_id: t.organizationId }).count({ n: '*' }).first())!.n);

  /** Sends the form twice with one token: the first answer, and where the second went with its notice. */
  const sendTwice = async (action: string, form: Record<string, string>) => {
    const first = await admin.post(action, form);
    expect(first.status, first.text.slice(0, 300)).to.equal(200);
    const second = await admin.post(action, form);
    expect(second.status).to.equal(303);
    const shown = await admin.get(second.headers.location!);
    expect(shown.status).to.equal(200);
    return { first, madeAt: second.headers.location!, notice: /<p class="flash flash-notice"[^>]*>([^<]+)</.exec(shown.text)?.[1] };
  };
  /** The address the answer gives the browser's history instead of the form's (public/address.js). */
  const addressOf = (html: string) => /<script src="\/assets\/address\.js" data-address="([^"]+)" defer><\/script>/.exec(html)?.[1];

  it('API key: a second sending makes no second key and goes to the list, which does not show the key again', async () => {
    const before = await count('api_keys');
    const { first, madeAt, notice } = await sendTwice('/keys', { _once: await onceOn('/keys', '/keys'), name: 'CI' });
    const key = /<code class="key" id="new-key">([^<]+)<\/code>/.exec(first.text)![1]!;
    expect(addressOf(first.text)).to.equal('/keys');
    expect(madeAt).to.equal('/keys');
    expect(notice).to.equal('This form was sent already: the key it made is in the list, and was shown once, when it was made.');
    expect(await count('api_keys')).to.equal(before + 1);
    expect(await audited('key.create')).to.equal(1);
    expect((await admin.get('/keys')).text).not.to.include(key);
    // A new token (the page read again) makes a new key.
    await admin.post('/keys', { _once: await onceOn('/keys', '/keys'), name: 'CI 2' });
    expect(await count('api_keys')).to.equal(before + 2);
  });

  it('channel: a second sending of the new-channel form makes no second channel and goes to the one made', async () => {
    const form = { kind: 'webhook', mode: 'task', name: 'Support form', verify: 'hmac-sha256', secret: '', address: '' };
    const path = `/b/${t.scribe.slug}/channels`;
    const { first, madeAt, notice } = await sendTwice(path, { ...form, _once: await onceOn(`${path}/new`, path) });
    const id = /action="\/channels\/([0-9a-f-]{36})\/disable"/.exec(first.text)![1]!;
    expect(madeAt).to.equal(`/channels/${id}`);
    expect(addressOf(first.text)).to.equal(`/channels/${id}`);
    expect(notice).to.equal('This form was sent already: this is the channel it made. Its secret was shown once, when it was made.');
    expect(await count('channels')).to.equal(1);
    expect(await audited('channel.create')).to.equal(1);
  });

  it("channel's new secret: a second sending keeps the secret the first one made", async () => {
    const [channel] = await h.db('channels').where({ organization_id: t.organizationId }).select('id');
    const action = `/channels/${channel.id}/rotate-secret`;
    const stored = async () => (await h.db('channels').where({ id: channel.id }).first('secret')).secret;
    const once = await onceOn(`/channels/${channel.id}`, action);
    const first = await admin.post(action, { _once: once });
    expect(/<code class="key" id="new-secret">[0-9a-f]{64}<\/code>/.test(first.text)).to.equal(true);
    const made = await stored();
    const second = await admin.post(action, { _once: once });
    expect([second.status, second.headers.location]).to.deep.equal([303, `/channels/${channel.id}`]);
    expect((await admin.get(second.headers.location!)).text).to.include('This form was sent already: the secret it made is the one in use, and was shown once, when it was made.');
    // The secret shown is still the one that verifies.
    expect(await stored()).to.equal(made);
    expect(await audited('channel.rotate_secret')).to.equal(1);
  });

  it('webhook endpoint: a second sending makes no second endpoint, and a second new secret none either', async () => {
    const form = { url: 'https://example.org/hooks/scribe', description: '', all_events: 'on' };
    const { first, madeAt, notice } = await sendTwice('/webhooks', { ...form, _once: await onceOn('/webhooks/new', '/webhooks') });
    const id = /action="\/webhooks\/([0-9a-f-]{36})\/test"/.exec(first.text)![1]!;
    expect(madeAt).to.equal(`/webhooks/${id}`);
    expect(addressOf(first.text)).to.equal(`/webhooks/${id}`);
    expect(notice).to.equal('This form was sent already: this is the endpoint it made. Its secret was shown once, when it was made.');
    expect(await count('webhook_endpoints')).to.equal(1);

    const rotate = `/webhooks/${id}/rotate-secret`;
    const rotated = await sendTwice(rotate, { _once: await onceOn(`/webhooks/${id}`, rotate) });
    expect(rotated.madeAt).to.equal(`/webhooks/${id}`);
    expect(rotated.notice).to.equal('This form was sent already: the secret it made is the one in use, and was shown once, when it was made.');
    expect(await audited('webhook.rotate_secret')).to.equal(1);
    // The edit form, which shows no secret, carries no token.
    expect((await admin.get(`/webhooks/${id}/edit`)).text).not.to.include('name="_once"');
  });

  it('invitation and reset links: a second sending makes no second link', async () => {
    const invited = await sendTwice('/users', { _once: await onceOn('/users', '/users'), email: 'new@example.com', role: 'viewer' });
    expect(invited.madeAt).to.equal('/users');
    expect(invited.notice).to.equal('This form was sent already: the link it made was shown once, when it was made. Make a new link to show one again.');
    expect(await audited('user.invite')).to.equal(1);

    const user = await h.db('users').where({ email: 'new@example.com' }).first('id');
    const reset = `/users/${user.id}/reset`;
    await sendTwice(reset, { _once: await onceOn('/users', reset) });
    // A new link for an invited user is another invitation: one, not two.
    expect(await audited('user.invite')).to.equal(2);
  });

  it('takes a form without a token as it comes, and a refused one does not spend its token', async () => {
    const before = await count('api_keys');
    await admin.post('/keys', { name: 'scripted' });
    await admin.post('/keys', { name: 'scripted' });
    expect(await count('api_keys')).to.equal(before + 2);

    const once = await onceOn('/keys', '/keys');
    const refused = await admin.post('/keys', { _once: once, name: 'x'.repeat(201) });
    expect(refused.status).to.equal(422);
    const fixed = await admin.post('/keys', { _once: once, name: 'fixed' });
    expect(fixed.status).to.equal(200);
    expect(await count('api_keys')).to.equal(before + 3);
  });
});
