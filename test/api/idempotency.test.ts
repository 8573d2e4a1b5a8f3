import { expect } from 'chai';
import { createHarness, testClock, type Harness, type Tenant } from '../helpers/harness.js';
import { startFileServer } from '../helpers/file-server.js';

describe('Idempotency-Key on POST requests and chat (Stripe semantics)', () => {
  let h: Harness;
  let t: Tenant;
  const clock = testClock();
  before(async () => {
    h = await createHarness({ env: { ATTACHMENTS_ALLOW_PRIVATE: 'true' }, options: { clock, dispatchOnAccept: false, runOnNewWork: false } });
    t = await h.tenant();
  });
  after(() => h.close());

  const submit = (key: string | undefined, body: unknown, tenant = t, slug = tenant.scribe.slug) => {
    const call = h.api.post(`/api/v1/scribes/${slug}/requests`).set(tenant.headers).set('Content-Type', 'application/json');
    if (key !== undefined) call.set('Idempotency-Key', key);
    return call.send(typeof body === 'string' ? body : JSON.stringify(body));
  };
  const receipts = async (summary: string) => h.db('requests').where({ summary });

  it('replays the first response for the same key and body, creating nothing more', async () => {
    const first = await submit('key-1', { task: { summary: 'once only', title: 'T' } });
    expect(first.status).to.equal(202);
    expect(first.headers).to.not.have.property('idempotent-replayed');
    clock.advance(1000);
    await h.services.dispatcher.tick();
    // Same parameters, keys in another order and other white space: the same request.
    const again = await submit('key-1', '{ "task": { "title": "T", "summary": "once only" } }');
    expect(again.status).to.equal(202);
    expect(again.headers['idempotent-replayed']).to.equal('true');
    expect(again.body).to.deep.equal(first.body);
    expect(again.body.request.status, 'the first response, as it was').to.equal('accepted');
    expect(await receipts('once only')).to.have.length(1);
    expect(await h.db('tasks').where({ request_id: first.body.request.id })).to.have.length(1);
  });

  it('answers 422 for the same key with other parameters, or on another path, creating nothing', async () => {
    await submit('key-2', { task: { summary: 'original' } });
    const other = await submit('key-2', { task: { summary: 'changed' } });
    expect(other.status).to.equal(422);
    expect(other.body).to.deep.equal({ error: 'Idempotency-Key reused with different parameters' });
    const chat = await h.api.post(`/api/v1/scribes/${t.scribe.slug}/chat`).set(t.headers).set('Idempotency-Key', 'key-2').send({ message: 'x' });
    expect(chat.status).to.equal(422);
    expect(chat.body).to.deep.equal({ error: 'Idempotency-Key reused with different parameters' });
    expect(await receipts('changed')).to.have.length(0);
    expect(await h.db('sessions').where({ scribe_id: t.scribe.id })).to.have.length(0);
  });

  it('answers 409 while the first request with the key is still running, then replays it', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const files = await startFileServer({
      '/slow.txt': (_req, res) => {
        void held.then(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('slow'));
      },
    });
    try {
      const body = { task: { summary: 'concurrent', attachments: [{ url: `${files.url}/slow.txt`, content_type: 'text/plain' }] } };
      const first = submit('key-3', body).then((r) => r);
      while (files.hits.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      const second = await submit('key-3', body);
      expect(second.status).to.equal(409);
      expect(second.body).to.deep.equal({ error: 'A request with this Idempotency-Key is still in progress' });
      release();
      expect((await first).status).to.equal(202);
      const third = await submit('key-3', body);
      expect(third.status).to.equal(202);
      expect(third.body).to.deep.equal((await first).body);
      expect(await receipts('concurrent')).to.have.length(1);
    } finally {
      release();
      await files.close();
    }
  });

  it('saves nothing for a request that failed, so it can be retried with the same key', async () => {
    const bad = await submit('key-4', { task: { summary: ' ' } });
    expect(bad.status).to.equal(422);
    expect(await h.db('idempotency_keys').where({ key: 'key-4' })).to.have.length(0);
    const fixed = await submit('key-4', { task: { summary: 'fixed' } });
    expect(fixed.status).to.equal(202);
    expect(fixed.headers).to.not.have.property('idempotent-replayed');
  });

  it('keeps keys per organization', async () => {
    const other = await h.tenant({ slug: 'other' });
    const mine = await submit('shared-key', { task: { summary: 'per org' } });
    const theirs = await submit('shared-key', { task: { summary: 'per org' } }, other);
    expect(mine.status).to.equal(202);
    expect(theirs.status).to.equal(202);
    expect(theirs.body.request.id).to.not.equal(mine.body.request.id);
    expect(await receipts('per org')).to.have.length(2);
  });

  it('forgets a key after 24 hours (and the prune job deletes it)', async () => {
    const first = await submit('key-5', { task: { summary: 'a day later' } });
    clock.advance(24 * 3_600_000 + 1);
    const later = await submit('key-5', { task: { summary: 'a day later' } });
    expect(later.status).to.equal(202);
    expect(later.body.request.id).to.not.equal(first.body.request.id);
    clock.advance(24 * 3_600_000 + 1);
    expect(await h.services.idempotency.prune()).to.be.greaterThan(0);
    expect(await h.db('idempotency_keys').where({ key: 'key-5' })).to.have.length(0);
  });

  it('takes over a key whose first request was left in progress by a process that died', async () => {
    await h.db('idempotency_keys').insert({
      organization_id: t.organizationId,
      key: 'key-6',
      request_hash: 'x'.repeat(64),
      state: 'in_progress',
      created_at: clock().toISOString(),
      expires_at: new Date(clock().getTime() + 86_400_000).toISOString(),
    });
    expect((await submit('key-6', { task: { summary: 'orphaned key' } })).status).to.equal(409);
    clock.advance(60_000);
    expect((await submit('key-6', { task: { summary: 'orphaned key' } })).status).to.equal(202);
    expect(await receipts('orphaned key')).to.have.length(1);
  });

  it('refuses a malformed key with 400 "Invalid Idempotency-Key"', async () => {
    for (const key of ['', 'has space', 'x'.repeat(256), 'naïve']) {
      const res = await h.api
        .post(`/api/v1/scribes/${t.scribe.slug}/requests`)
        .set(t.headers)
        .set('Idempotency-Key', key)
        .send({ task: { summary: 'bad key' } });
      expect(res.status, JSON.stringify(key)).to.equal(400);
      expect(res.body).to.deep.equal({ error: 'Invalid Idempotency-Key' });
    }
    expect(await receipts('bad key')).to.have.length(0);
  });

  it('replays chat: the same session_id, one session', async () => {
    const chat = () => h.api.post(`/api/v1/scribes/${t.scribe.slug}/chat`).set(t.headers).set('Idempotency-Key', 'chat-1').send({ message: 'hello once' });
    const first = await chat();
    const second = await chat();
    expect(first.status).to.equal(202);
    expect(second.status).to.equal(202);
    expect(second.body).to.deep.equal(first.body);
    expect(second.headers['idempotent-replayed']).to.equal('true');
    expect(await h.db('session_messages').where({ text: 'hello once' })).to.have.length(1);
  });

  // A body nested 4,000 levels deep used to overflow the stack while the key's hash was made (500).
  const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

  it('answers 202 for a submit whose body nests 4,000 (and 400,000) levels deep, and replays it', async () => {
    for (const depth of [4000, 400_000]) {
      const body = `{"task":{"summary":"deep ${depth}"},"extra":${nested(depth)}}`;
      const first = await submit(`deep-${depth}`, body);
      expect(first.status, first.text).to.equal(202);
      const again = await submit(`deep-${depth}`, body);
      expect(again.status).to.equal(202);
      expect(again.headers['idempotent-replayed']).to.equal('true');
      expect(again.body).to.deep.equal(first.body);
      expect(await receipts(`deep ${depth}`)).to.have.length(1);
    }
  });

  it('answers 202 for a chat message whose body nests 4,000 levels deep, and 422 when the nesting is the message', async () => {
    const chat = (key: string, body: string) =>
      h.api.post(`/api/v1/scribes/${t.scribe.slug}/chat`).set(t.headers).set('Content-Type', 'application/json').set('Idempotency-Key', key).send(body);
    const ok = await chat('deep-chat', `{"message":"deep chat","extra":${nested(4000)}}`);
    expect(ok.status, ok.text).to.equal(202);
    expect(await h.db('session_messages').where({ text: 'deep chat' })).to.have.length(1);
    const bad = await chat('deep-chat-2', `{"message":${nested(4000)}}`);
    expect(bad.status).to.equal(422);
    expect(bad.body).to.deep.equal({ error: 'message must be a string' });
  });

  it('changes nothing without the header', async () => {
    const a = await submit(undefined, { task: { summary: 'no key' } });
    const b = await submit(undefined, { task: { summary: 'no key' } });
    expect(a.body.request.id).to.not.equal(b.body.request.id);
    expect(await receipts('no key')).to.have.length(2);
  });
});
