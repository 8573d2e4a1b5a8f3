import { createHash, createHmac } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { createHarness, staffOf, type Harness, type Tenant } from '../helpers/harness.js';
import type { ChannelInput } from '../../src/channels/service.js';

/** Signatures made here with the schemes' own recipes (and Standard Webhooks' library), not the app's code. */
const hmacHex = (secret: string, content: string) => createHmac('sha256', secret).update(content).digest('hex');
const unixNow = () => Math.floor(Date.now() / 1000);

describe('inbound webhook channels', () => {
  let h: Harness;
  let t: Tenant;
  before(async () => {
    h = await createHarness({ options: { dispatchOnAccept: false, runOnNewWork: false } });
    t = await h.tenant();
  });
  after(() => h.close());

  const create = async (input: Partial<ChannelInput> = {}, scribe = t.scribe.slug) => {
    const { channel, secret } = await h.services.channels.create(staffOf(t), scribe, { kind: 'webhook', ...input });
    return { channel, secret: secret!, url: `/inbound/${channel.token}` };
  };
  const post = (url: string, body: string, headers: Record<string, string> = {}) =>
    h.api
      .post(url)
      .set({ 'Content-Type': 'application/json', ...headers })
      .send(body);
  const deliveries = (channelId: string) =>
    h.db('channel_deliveries').where({ channel_id: channelId }).orderBy('received_at').select('outcome', 'status', 'reason', 'request_id', 'session_id', 'replay_key');
  const receiptsOf = (channelId: string) => h.db('requests').where({ origin_type: 'channel', origin_id: channelId }).select('id', 'title', 'summary');

  describe('creating one', () => {
    it('makes an unguessable token and a secret for the preset, and audits it', async () => {
      const { channel, secret, url } = await create({ verify: 'standard-webhooks', mode: 'chat' });
      expect(channel.token).to.match(/^[A-Za-z0-9_-]{32}$/);
      expect(url).to.equal(`/inbound/${channel.token}`);
      expect(secret).to.match(/^whsec_[A-Za-z0-9+/]{32}$/);
      expect(channel).to.include({ kind: 'webhook', mode: 'chat', verify: 'standard-webhooks', name: 'Webhook (standard-webhooks)', enabled: true });
      expect((await create({ verify: 'github' })).secret).to.match(/^[0-9a-f]{64}$/);
      expect((await h.services.channels.create(staffOf(t), t.scribe.slug, { kind: 'webhook' })).secret).to.equal(null);
      const event = await h.db('audit_events').where({ subject_type: 'channel', subject_id: channel.id }).first();
      expect(event).to.include({ action: 'channel.create', actor_type: 'user', detail: 'chat, verify standard-webhooks' });
    });

    for (const [input, message] of [
      [{ kind: 'sms' }, 'Kind must be one of webhook, email'],
      [{ mode: 'both' }, 'Mode must be one of task, chat'],
      [{ verify: 'stripe' }, 'Verification preset must be one of none, standard-webhooks, github, slack, hmac-sha256'],
      [{ verify: 'github', secret: 'short' }, 'Secret must be 16 to 200 characters'],
      [{ verify: 'standard-webhooks', secret: 'whsec_not base64 at all!!' }, 'A Standard Webhooks secret is whsec_ followed by base64'],
      [{ secret: 'a-secret-of-enough-length' }, 'The preset none takes no secret'],
      [{ kind: 'email', address: 'not an address' }, 'Address must be an email address, like atlas@inbound.example.com'],
      [{ name: 'n'.repeat(101) }, 'Name must be at most 100 characters'],
    ] as const) {
      it(`refuses ${JSON.stringify(input)} with 422 "${message}" and stores nothing`, async () => {
        const before = await h.db('channels').count({ n: '*' }).first();
        const err = await create(input).catch((e: Error & { status: number }) => e);
        expect(err).to.include({ status: 422, message });
        expect(await h.db('channels').count({ n: '*' }).first()).to.deep.equal(before);
      });
    }

    it('answers 404 "Scribe not found" for a scribe of another organization', async () => {
      const other = await h.tenant({ slug: 'elsewhere' });
      const err = await h.services.channels.create(staffOf(t), other.scribe.slug, { kind: 'webhook' }).catch((e: Error & { status: number }) => e);
      expect(err).to.include({ status: 404, message: 'Scribe not found' });
    });
  });

  describe('POST /inbound/<token>', () => {
    it('turns a JSON body with summary and title into a receipt from the channel, audited as the channel', async () => {
      const { channel, url } = await create({ name: 'Support form' });
      const res = await post(url, JSON.stringify({ summary: 'Call back Ms. Ito about the invoice', title: 'Callback' }));
      expect(res.status).to.equal(202);
      expect(Object.keys(res.body)).to.deep.equal(['request_id']);
      expect(await receiptsOf(channel.id)).to.deep.equal([{ id: res.body.request_id, title: 'Callback', summary: 'Call back Ms. Ito about the invoice' }]);
      const receipt = await h.api.get(`/api/v1/requests/${res.body.request_id}`).set(t.headers);
      expect(receipt.body.request).to.include({ status: 'accepted', scribe_id: t.scribe.slug });
      const event = await h.db('audit_events').where({ subject_type: 'request', subject_id: res.body.request_id }).first();
      expect(event).to.include({ action: 'request.submit', actor_type: 'channel', actor_id: channel.id, actor_label: 'channel: Support form' });
      expect(await deliveries(channel.id)).to.deep.equal([{ outcome: 'created', status: 202, reason: null, request_id: res.body.request_id, session_id: null, replay_key: null }]);
    });

    it('takes the whole body as the summary when it has no summary field: JSON, text, or a form as name: value lines', async () => {
      const { channel, url } = await create();
      const json = '{"event":"order.paid","order":{"id":42}}';
      await post(url, json).expect(202);
      await h.api.post(url).set('Content-Type', 'text/plain').send('Printer on floor 3 is out of toner').expect(202);
      await h.api.post(url).type('form').send('name=Ada&topic=Billing').expect(202);
      await h.api.post(url).type('form').send('summary=From+a+form&title=Form+title').expect(202);
      const rows = await receiptsOf(channel.id);
      expect(rows.map((r) => r.summary).sort()).to.deep.equal([json, 'From a form', 'Printer on floor 3 is out of toner', 'name: Ada\ntopic: Billing'].sort());
      expect(rows.find((r) => r.summary === 'From a form')!.title).to.equal('Form title');
    });

    it('cuts a long title to 200 characters rather than losing the delivery', async () => {
      const { channel, url } = await create();
      await post(url, JSON.stringify({ summary: 'Long title', title: 'T'.repeat(300) })).expect(202);
      expect((await receiptsOf(channel.id))[0]!.title).to.equal('T'.repeat(200));
    });

    it('stores half an emoji escaped in the JSON (\\ud800) as one U+FFFD, as the API stores it, on both databases', async () => {
      const { channel, url } = await create();
      await post(url, '{"summary":"a\\ud800b","title":"t\\udc00x"}').expect(202);
      const [receipt] = await receiptsOf(channel.id);
      expect([receipt!.title, receipt!.summary]).to.deep.equal(['t\ufffdx', 'a\ufffdb']);
    });

    it('cuts a title without splitting a character made of two UTF-16 units (an emoji at the cut is left out whole)', async () => {
      const { channel, url } = await create();
      await post(url, JSON.stringify({ summary: 'Emoji title', title: `${'a'.repeat(199)}😀 tail` })).expect(202);
      const [receipt] = await receiptsOf(channel.id);
      expect(receipt!.title).to.equal('a'.repeat(199));
      // Stored as valid text on both databases: the same characters read back.
      expect(
        await h
          .db('requests')
          .where({ id: receipt!.id, title: 'a'.repeat(199) })
          .count({ n: '*' })
          .first(),
      ).to.deep.equal({ n: 1 });
    });

    it('refuses a compressed body with 415, since its signature covers the bytes sent, and records the refusal', async () => {
      const { channel, secret, url } = await create({ verify: 'hmac-sha256' });
      const zipped = gzipSync('{"summary":"gzip body"}');
      const res = await h.api
        .post(url)
        .set({ 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', 'X-Signature': `sha256=${createHmac('sha256', secret).update(zipped).digest('hex')}` })
        .send(zipped);
      expect(res.status).to.equal(415);
      expect(res.body).to.deep.equal({ error: 'Content-Encoding is not taken here: send the body as it was signed' });
      expect(await receiptsOf(channel.id)).to.deep.equal([]);
      expect(await deliveries(channel.id)).to.deep.equal([
        { outcome: 'refused', status: 415, reason: 'Content-Encoding is not taken here: send the body as it was signed', request_id: null, session_id: null, replay_key: null },
      ]);
    });

    for (const [body, contentType, status, error] of [
      ['{"summary": ', 'application/json', 400, 'Invalid JSON body'],
      ['', 'text/plain', 422, 'Summary is required'],
      ['{"summary": "a\\u0000b"}', 'application/json', 422, 'summary must not contain U+0000'],
    ] as const) {
      it(`answers ${status} "${error}" for ${JSON.stringify(body)} (${contentType}), records the refusal and creates nothing`, async () => {
        const { channel, url } = await create();
        const res = await h.api.post(url).set('Content-Type', contentType).send(body);
        expect(res.status).to.equal(status);
        expect(res.body).to.deep.equal({ error });
        expect(await receiptsOf(channel.id)).to.deep.equal([]);
        expect(await deliveries(channel.id)).to.deep.equal([{ outcome: 'refused', status, reason: error, request_id: null, session_id: null, replay_key: null }]);
      });
    }

    it('answers 413 "Request body too large" above 1 MiB, declared or streamed, and records it', async () => {
      const { channel, url } = await create();
      const big = JSON.stringify({ summary: 'x'.repeat(1024 * 1024) });
      const res = await post(url, big);
      expect(res.status).to.equal(413);
      expect(res.body).to.deep.equal({ error: 'Request body too large' });
      expect(await receiptsOf(channel.id)).to.deep.equal([]);
      expect((await deliveries(channel.id)).map((d) => [d.outcome, d.status])).to.deep.equal([['refused', 413]]);
    });

    it('answers 404 "Not found" for an unknown, malformed or disabled token', async () => {
      const { channel, url } = await create();
      for (const path of ['/inbound/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', '/inbound/nope', '/inbound/..%2Fapi']) {
        const res = await post(path, '{"summary":"x"}');
        expect(res.status, path).to.equal(404);
        expect(res.body).to.deep.equal({ error: 'Not found' });
      }
      await h.services.channels.setEnabled(staffOf(t), channel.id, false);
      const res = await post(url, '{"summary":"x"}');
      expect(res.status).to.equal(404);
      expect(res.body).to.deep.equal({ error: 'Not found' });
      expect((await h.api.get(url)).body).to.deep.equal({ error: 'Not found' });
      await h.services.channels.setEnabled(staffOf(t), channel.id, true);
      await post(url, '{"summary":"x"}').expect(202);
      const actions = await h.db('audit_events').where({ subject_id: channel.id }).orderBy('id').pluck('action');
      expect(actions).to.deep.equal(['channel.create', 'channel.disable', 'channel.enable']);
    });

    it('answers 422 "Scribe is not active" for a task; a chat message still queues (as the chat API does)', async () => {
      const quiet = await h.tenant({ slug: 'quiet', state: 'powered_off' });
      const task = await h.services.channels.create(staffOf(quiet), 'quiet', { kind: 'webhook' });
      const res = await post(`/inbound/${task.channel.token}`, '{"summary":"x"}');
      expect(res.status).to.equal(422);
      expect(res.body).to.deep.equal({ error: 'Scribe is not active' });
      expect((await deliveries(task.channel.id))[0]).to.include({ outcome: 'refused', status: 422, reason: 'Scribe is not active' });

      const chat = await h.services.channels.create(staffOf(quiet), 'quiet', { kind: 'webhook', mode: 'chat' });
      const started = await post(`/inbound/${chat.channel.token}`, '{"message":"Are you there?"}');
      expect(started.status).to.equal(202);
      expect(Object.keys(started.body)).to.deep.equal(['session_id']);
      const session = await h.services.sessions.get(quiet.organizationId, started.body.session_id);
      expect(session.state).to.equal('queued');
      expect(session.messages.map((m) => [m.author, m.text])).to.deep.equal([['user', 'Are you there?']]);
      expect((await deliveries(chat.channel.id))[0]).to.include({ outcome: 'created', session_id: session.id });
    });

    it('counts deliveries per channel against RATE_LIMIT_PER_MINUTE: 429 "Rate limit exceeded" for that channel only', async () => {
      const limited = await createHarness({ env: { RATE_LIMIT_PER_MINUTE: '3' }, options: { dispatchOnAccept: false, runOnNewWork: false } });
      try {
        const tenant = await limited.tenant();
        const one = await limited.services.channels.create(staffOf(tenant), 'atlas', { kind: 'webhook' });
        const two = await limited.services.channels.create(staffOf(tenant), 'atlas', { kind: 'webhook' });
        const send = (token: string) => limited.api.post(`/inbound/${token}`).type('json').send('{"summary":"ping"}');
        for (let i = 0; i < 3; i++) expect((await send(one.channel.token!)).status).to.equal(202);
        const refused = await send(one.channel.token!);
        expect(refused.status).to.equal(429);
        expect(refused.body).to.deep.equal({ error: 'Rate limit exceeded' });
        expect(refused.headers['retry-after']).to.match(/^\d+$/);
        expect((await send(two.channel.token!)).status).to.equal(202);
        expect(await limited.db('requests').where({ origin_id: one.channel.id }).count({ n: '*' }).first()).to.deep.include({ n: 3 });
      } finally {
        await limited.close();
      }
    });
  });

  describe('verification presets', () => {
    const body = JSON.stringify({ summary: 'Signed work' });
    const tampered = JSON.stringify({ summary: 'Signed work, and wire the money' });

    /** Each preset's signing, as its sender does it; `at` is the Unix time signed. */
    const presets: Record<string, (secret: string, payload: string, at: number, id: string) => Record<string, string>> = {
      'standard-webhooks': (secret, payload, at, id) => ({
        'webhook-id': id,
        'webhook-timestamp': String(at),
        'webhook-signature': new Webhook(secret).sign(id, new Date(at * 1000), payload),
      }),
      github: (secret, payload, _at, id) => ({ 'X-Hub-Signature-256': `sha256=${hmacHex(secret, payload)}`, 'X-GitHub-Delivery': id, 'X-GitHub-Event': 'issues' }),
      slack: (secret, payload, at) => ({ 'X-Slack-Request-Timestamp': String(at), 'X-Slack-Signature': `v0=${hmacHex(secret, `v0:${at}:${payload}`)}` }),
      'hmac-sha256': (secret, payload, _at, id) => ({ 'X-Signature': `sha256=${hmacHex(secret, payload)}`, 'Idempotency-Key': id }),
    };
    const otherSecret = (preset: string) =>
      preset === 'standard-webhooks' ? `whsec_${Buffer.from('another secret of 24 byte').toString('base64')}` : 'another-secret-of-some-length';

    for (const [preset, sign] of Object.entries(presets)) {
      describe(preset, () => {
        it('accepts a correctly signed request', async () => {
          const { channel, secret, url } = await create({ verify: preset });
          const res = await post(url, body, sign(secret, body, unixNow(), `msg_${preset}_ok`));
          expect(res.status).to.equal(202);
          expect((await receiptsOf(channel.id)).map((r) => r.id)).to.deep.equal([res.body.request_id]);
        });

        it('accepts a secret given by staff', async () => {
          const given = otherSecret(preset);
          const { secret, url } = await create({ verify: preset, secret: given });
          expect(secret).to.equal(given);
          await post(url, body, sign(given, body, unixNow(), `msg_${preset}_given`)).expect(202);
        });

        const refusals: [string, (secret: string) => [string, Record<string, string>]][] = [
          ['a tampered body', (secret) => [tampered, sign(secret, body, unixNow(), 'msg_t')]],
          ['a wrong secret', () => [body, sign(otherSecret(preset), body, unixNow(), 'msg_w')]],
          ['no signature', () => [body, {}]],
        ];
        if (preset === 'standard-webhooks' || preset === 'slack') {
          refusals.push(['a timestamp 6 minutes old', (secret) => [body, sign(secret, body, unixNow() - 360, 'msg_s')]]);
          refusals.push(['a timestamp 6 minutes ahead', (secret) => [body, sign(secret, body, unixNow() + 360, 'msg_f')]]);
        }
        for (const [name, make] of refusals) {
          it(`refuses ${name} with 401 "Invalid signature", records why, and creates nothing`, async () => {
            const { channel, secret, url } = await create({ verify: preset });
            const [payload, headers] = make(secret);
            const res = await post(url, payload, headers);
            expect(res.status).to.equal(401);
            expect(res.body).to.deep.equal({ error: 'Invalid signature' });
            expect(await receiptsOf(channel.id)).to.deep.equal([]);
            const [delivery] = await deliveries(channel.id);
            expect(delivery).to.include({ outcome: 'refused', status: 401 });
            expect(delivery.reason).to.be.a('string').and.not.equal('');
            expect(delivery.reason).not.to.include(secret);
          });
        }
      });
    }

    describe('a body that is not UTF-8: every preset signs its raw bytes', () => {
      // JSON whose summary is Latin-1 "Café crème " and the bytes 0xff 0xfe, none of which UTF-8 can decode.
      const raw = Buffer.concat([Buffer.from('{"summary":"Caf\u00e9 cr\u00e8me ', 'latin1'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
      // What decoding makes of it: U+FFFD for each undecodable byte, a different byte string.
      const decoded = Buffer.from(raw.toString('utf8'));
      const hmac = (key: string | Buffer, ...parts: Array<string | Buffer>) => parts.reduce((mac, part) => mac.update(part), createHmac('sha256', key));
      /** Each preset's signing of bytes, by the scheme's recipe. */
      const signBytes: Record<string, (secret: string, payload: Buffer, at: number, id: string) => Record<string, string>> = {
        none: () => ({}),
        'standard-webhooks': (secret, payload, at, id) => {
          const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
          return { 'webhook-id': id, 'webhook-timestamp': String(at), 'webhook-signature': `v1,${hmac(key, `${id}.${at}.`, payload).digest('base64')}` };
        },
        github: (secret, payload) => ({ 'X-Hub-Signature-256': `sha256=${hmac(secret, payload).digest('hex')}` }),
        slack: (secret, payload, at) => ({ 'X-Slack-Request-Timestamp': String(at), 'X-Slack-Signature': `v0=${hmac(secret, `v0:${at}:`, payload).digest('hex')}` }),
        'hmac-sha256': (secret, payload) => ({ 'X-Signature': `sha256=${hmac(secret, payload).digest('hex')}` }),
      };
      // As bytes: superagent would otherwise write a Buffer sent as JSON out as {"type":"Buffer",...}.
      const postBytes = (url: string, headers: Record<string, string>) =>
        h.api
          .post(url)
          .set({ 'Content-Type': 'application/json', ...headers })
          .serialize((bytes) => bytes)
          .send(raw);

      for (const [preset, sign] of Object.entries(signBytes)) {
        it(`${preset}: accepts it signed over its bytes (202), the summary being its field as decoded`, async () => {
          const { channel, secret, url } = await create({ verify: preset });
          const res = await postBytes(url, sign(secret, raw, unixNow(), `msg_${preset}_bytes`));
          expect(res.status, res.text).to.equal(202);
          expect(await receiptsOf(channel.id)).to.deep.equal([
            { id: res.body.request_id, title: 'Caf\ufffd cr\ufffdme \ufffd\ufffd', summary: 'Caf\ufffd cr\ufffdme \ufffd\ufffd' },
          ]);
        });
        if (preset === 'none') continue;
        it(`${preset}: refuses it signed over its decoded text with 401 "Invalid signature", creating nothing`, async () => {
          const { channel, secret, url } = await create({ verify: preset });
          const res = await postBytes(url, sign(secret, decoded, unixNow(), `msg_${preset}_decoded`));
          expect(res.status).to.equal(401);
          expect(res.body).to.deep.equal({ error: 'Invalid signature' });
          expect(await receiptsOf(channel.id)).to.deep.equal([]);
          expect(await deliveries(channel.id))
            .to.have.length(1)
            .and.to.have.nested.property('[0].outcome', 'refused');
        });
      }

      it('standard-webhooks: accepts a signed text or form body, not only JSON', async () => {
        const { channel, secret, url } = await create({ verify: 'standard-webhooks' });
        const form = 'summary=Signed+form&title=Form';
        const res = await h.api
          .post(url)
          .set({ 'Content-Type': 'application/x-www-form-urlencoded', ...signBytes['standard-webhooks']!(secret, Buffer.from(form), unixNow(), 'msg_form') })
          .send(form);
        expect(res.status, res.text).to.equal(202);
        expect(await receiptsOf(channel.id)).to.deep.equal([{ id: res.body.request_id, title: 'Form', summary: 'Signed form' }]);
      });
    });

    it('checks the exact bytes: the same JSON with other spacing is a tampered body', async () => {
      const { secret, url } = await create({ verify: 'hmac-sha256' });
      const headers = presets['hmac-sha256']!(secret, body, unixNow(), 'msg_bytes');
      expect((await post(url, JSON.stringify(JSON.parse(body), null, 2), headers)).status).to.equal(401);
      expect((await post(url, body, headers)).status).to.equal(202);
    });

    it('takes any of several Standard Webhooks signatures (a sender rotating its secret)', async () => {
      const { secret, url } = await create({ verify: 'standard-webhooks' });
      const headers = presets['standard-webhooks']!(secret, body, unixNow(), 'msg_rotating');
      const old = presets['standard-webhooks']!(otherSecret('standard-webhooks'), body, unixNow(), 'msg_rotating');
      headers['webhook-signature'] = `${old['webhook-signature']} ${headers['webhook-signature']}`;
      expect((await post(url, body, headers)).status).to.equal(202);
    });

    it("answers Slack's signed url_verification with its challenge, and creates nothing", async () => {
      const { channel, secret, url } = await create({ verify: 'slack' });
      const challenge = JSON.stringify({ token: 'legacy', challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P', type: 'url_verification' });
      const res = await post(url, challenge, presets.slack!(secret, challenge, unixNow(), ''));
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({ challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });
      expect(await receiptsOf(channel.id)).to.deep.equal([]);
      expect((await post(url, challenge, presets.slack!(otherSecret('slack'), challenge, unixNow(), ''))).status).to.equal(401);
    });

    it('a new secret replaces the old one at once', async () => {
      const { channel, secret, url } = await create({ verify: 'github' });
      const rotated = await h.services.channels.rotateSecret(staffOf(t), channel.id);
      expect(rotated)
        .to.match(/^[0-9a-f]{64}$/)
        .and.not.equal(secret);
      expect((await post(url, body, presets.github!(secret, body, 0, 'd-old'))).status).to.equal(401);
      expect((await post(url, body, presets.github!(rotated, body, 0, 'd-new'))).status).to.equal(202);
      const err = await h.services.channels.rotateSecret(staffOf(t), (await create()).channel.id).catch((e: Error) => e);
      expect(err).to.include({ status: 422, message: 'This channel verifies nothing, so it has no secret' });
    });
  });

  describe('replayed deliveries', () => {
    const cases: [string, Partial<ChannelInput>, (secret: string, payload: string) => Record<string, string>, (n: number) => string][] = [
      [
        'the same webhook-id (Standard Webhooks)',
        { verify: 'standard-webhooks' },
        (secret, payload) => ({
          'webhook-id': 'msg_2bX',
          'webhook-timestamp': String(unixNow()),
          'webhook-signature': new Webhook(secret).sign('msg_2bX', new Date(unixNow() * 1000), payload),
        }),
        () => '{"summary":"once"}',
      ],
      [
        'the same X-GitHub-Delivery (GitHub redeliver)',
        { verify: 'github' },
        (secret, payload) => ({ 'X-Hub-Signature-256': `sha256=${hmacHex(secret, payload)}`, 'X-GitHub-Delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958' }),
        () => '{"summary":"once"}',
      ],
      [
        'a Slack retry of the same event_id',
        { verify: 'slack' },
        (secret, payload) => ({ 'X-Slack-Request-Timestamp': String(unixNow()), 'X-Slack-Signature': `v0=${hmacHex(secret, `v0:${unixNow()}:${payload}`)}` }),
        (n) => JSON.stringify({ type: 'event_callback', event_id: 'Ev08MFMKH6', event: { text: 'once' }, retry: n }),
      ],
      ['the same Idempotency-Key (no verification)', {}, () => ({ 'Idempotency-Key': 'order-42-paid' }), () => '{"summary":"once"}'],
    ];
    for (const [name, input, sign, payloadOf] of cases) {
      it(`creates nothing new for ${name}, and answers what the first made`, async () => {
        const { channel, secret, url } = await create(input);
        const first = await post(url, payloadOf(0), sign(secret, payloadOf(0)));
        expect(first.status).to.equal(202);
        const again = await post(url, payloadOf(1), { ...sign(secret, payloadOf(1)), 'X-Slack-Retry-Num': '1' });
        expect(again.status).to.equal(202);
        expect(again.body).to.deep.equal(first.body);
        expect(await receiptsOf(channel.id)).to.have.length(1);
        expect((await deliveries(channel.id)).map((d) => [d.outcome, d.request_id])).to.deep.equal([
          ['created', first.body.request_id],
          ['replayed', first.body.request_id],
        ]);
      });
    }

    it('keeps a delivery id over 200 characters by its SHA-256, so two that begin alike are two deliveries and each replays', async () => {
      const { channel, url } = await create();
      const [one, two] = ['one', 'two'].map((end) => `${'k'.repeat(250)}-${end}`);
      const first = await post(url, '{"summary":"long key 1"}', { 'Idempotency-Key': one! }).expect(202);
      const second = await post(url, '{"summary":"long key 2"}', { 'Idempotency-Key': two! }).expect(202);
      expect(second.body.request_id).not.to.equal(first.body.request_id);
      const again = await post(url, '{"summary":"long key 1"}', { 'Idempotency-Key': one! }).expect(202);
      expect(again.body).to.deep.equal(first.body);
      const sha = (key: string) => `sha256:${createHash('sha256').update(key).digest('hex')}`;
      expect((await deliveries(channel.id)).map((d) => [d.outcome, d.replay_key])).to.deep.equal([
        ['created', sha(one!)],
        ['created', sha(two!)],
        ['replayed', null],
      ]);
    });

    it('creates one receipt for five copies sent at once', async () => {
      const { channel, url } = await create();
      const answers = await Promise.all(Array.from({ length: 5 }, () => post(url, '{"summary":"burst"}', { 'Idempotency-Key': 'burst-1' })));
      expect(answers.map((a) => a.status)).to.deep.equal([202, 202, 202, 202, 202]);
      expect(new Set(answers.map((a) => a.body.request_id)).size).to.equal(1);
      expect(await receiptsOf(channel.id)).to.have.length(1);
      expect((await deliveries(channel.id)).filter((d) => d.outcome === 'created')).to.have.length(1);
    });

    it('a refused delivery sent again, now correctly signed, creates its receipt', async () => {
      const { channel, secret, url } = await create({ verify: 'github' });
      const payload = '{"summary":"retry me"}';
      await post(url, payload, { 'X-Hub-Signature-256': 'sha256=00', 'X-GitHub-Delivery': 'same' }).expect(401);
      await post(url, payload, { 'X-Hub-Signature-256': `sha256=${hmacHex(secret, payload)}`, 'X-GitHub-Delivery': 'same' }).expect(202);
      expect(await receiptsOf(channel.id)).to.have.length(1);
    });
  });
});
