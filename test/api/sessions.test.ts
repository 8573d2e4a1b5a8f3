import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';

describe('sessions over the API: GET /sessions/:id, POST /sessions/:id/messages and /cancel', () => {
  let h: Harness;
  let t: Tenant;
  let other: Tenant;
  before(async () => {
    // The runtime is driven by hand here, so each state can be seen.
    h = await createHarness({ options: { runOnNewWork: false } });
    t = await h.tenant();
    other = await h.tenant({ slug: 'other' });
  });
  after(() => h.close());

  async function started(message: string): Promise<string> {
    const res = await h.api.post(`/api/v1/scribes/${t.scribe.slug}/chat`).set(t.headers).send({ message });
    expect(res.status).to.equal(202);
    return res.body.session_id;
  }
  const read = (id: string, tenant = t) => h.api.get(`/api/v1/sessions/${id}`).set(tenant.headers);
  const say = (id: string, body: unknown, tenant = t) =>
    h.api
      .post(`/api/v1/sessions/${id}/messages`)
      .set(tenant.headers)
      .send(body as object);
  const cancel = (id: string, tenant = t) => h.api.post(`/api/v1/sessions/${id}/cancel`).set(tenant.headers);
  const texts = (body: { session: { messages: Array<{ author: string; text: string }> } }) => body.session.messages.map((m) => `${m.author}: ${m.text}`);

  it('holds a whole conversation of three turns, each answered in order', async () => {
    const id = await started('Hello');
    const queued = await read(id);
    expect(queued.status).to.equal(200);
    expect(Object.keys(queued.body.session)).to.deep.equal(['id', 'scribe_id', 'status', 'messages', 'usage', 'created_at', 'updated_at']);
    expect(queued.body.session).to.deep.include({ id, scribe_id: 'atlas', status: 'queued', usage: { input_tokens: 0, output_tokens: 0 } });
    expect(queued.body.session.messages).to.have.length(1);
    expect(queued.body.session.messages[0]).to.include({ author: 'user', text: 'Hello', partial: false });
    expect(Object.keys(queued.body.session.messages[0])).to.deep.equal(['id', 'author', 'text', 'partial', 'created_at']);
    await h.services.runtime.tick();
    expect((await read(id)).body.session.status).to.equal('waiting');
    for (const message of ['What are you working on?', 'Thanks']) {
      const res = await say(id, { message });
      expect(res.status).to.equal(202);
      expect(res.body.session).to.include({ id, status: 'queued' });
      expect(res.body.session.messages.at(-1)).to.include({ author: 'user', text: message, partial: false });
      await h.services.runtime.tick();
    }
    const done = (await read(id)).body;
    expect(done.session.status).to.equal('waiting');
    expect(done.session.messages.map((m: { author: string }) => m.author)).to.deep.equal(['user', 'scribe', 'user', 'scribe', 'user', 'scribe']);
    expect(texts(done)[3]).to.match(/^scribe: .*task/i);
    expect(await h.db('sessions').where({ id }).first('state', 'reply_due')).to.deep.include({ state: 'waiting' });
  });

  it('answers a message sent while the session is still queued after the first one, in the same answer', async () => {
    const id = await started('First');
    const res = await say(id, { message: 'Second' });
    expect(res.status).to.equal(202);
    expect(res.body.session.status).to.equal('queued');
    await h.services.runtime.tick();
    expect(texts((await read(id)).body).map((line) => line.split(':')[0])).to.deep.equal(['user', 'user', 'scribe']);
  });

  it('refuses a message to a closed session with 409 "Session is closed", and a missing or blank one with 422 "Message is required"', async () => {
    const id = await started('Short');
    for (const body of [{}, { message: '' }, { message: ' \n' }, { message: null }]) {
      const res = await say(id, body);
      expect([res.status, res.body]).to.deep.equal([422, { error: 'Message is required' }]);
    }
    expect((await say(id, { message: 7 })).body).to.deep.equal({ error: 'message must be a string' });
    expect((await cancel(id)).status).to.equal(200);
    const res = await say(id, { message: 'Anyone?' });
    expect([res.status, res.body]).to.deep.equal([409, { error: 'Session is closed' }]);
    expect(await h.db('session_messages').where({ session_id: id, author: 'user' }).pluck('text')).to.deep.equal(['Short']);
  });

  it('cancels a session: 200 cancelled, never answered, then 409 "Session is closed"', async () => {
    const id = await started('Stop me');
    const res = await cancel(id);
    expect(res.status).to.equal(200);
    expect(res.body.session).to.include({ id, status: 'cancelled' });
    expect(texts(res.body), "the system's note stays in the console").to.deep.equal(['user: Stop me']);
    await h.services.runtime.tick();
    expect(
      await h
        .db('session_messages')
        .where({ session_id: id, author: 'scribe' })
        .count({ n: '*' })
        .first()
        .then((r) => Number(r!.n)),
    ).to.equal(0);
    const again = await cancel(id);
    expect([again.status, again.body]).to.deep.equal([409, { error: 'Session is closed' }]);
  });

  it("answers another organization's session and an unknown id with the same 404, and adds nothing", async () => {
    const id = await started('Private');
    for (const res of [
      await read(id, other),
      await say(id, { message: 'x' }, other),
      await cancel(id, other),
      await read('01935f00-0000-7000-8000-000000000000'),
      await read('nope'),
    ]) {
      expect([res.status, res.body]).to.deep.equal([404, { error: 'Session not found' }]);
    }
    expect(
      await h
        .db('session_messages')
        .where({ session_id: id })
        .count({ n: '*' })
        .first()
        .then((r) => Number(r!.n)),
    ).to.equal(1);
    expect((await h.db('sessions').where({ id }).first('state')).state).to.equal('queued');
  });

  it('replays a message sent twice with one Idempotency-Key, adding it once', async () => {
    const id = await started('Once');
    await h.services.runtime.tick();
    const first = await say(id, { message: 'Only once' }).set('Idempotency-Key', 'say-once');
    const second = await say(id, { message: 'Only once' }).set('Idempotency-Key', 'say-once');
    expect([first.status, second.status, second.headers['idempotent-replayed']]).to.deep.equal([202, 202, 'true']);
    expect(second.body).to.deep.equal(first.body);
    expect(
      await h
        .db('session_messages')
        .where({ session_id: id, text: 'Only once' })
        .count({ n: '*' })
        .first()
        .then((r) => Number(r!.n)),
    ).to.equal(1);
  });

  it('answers 401 without a key', async () => {
    const id = await started('Keyless');
    expect((await h.api.get(`/api/v1/sessions/${id}`)).status).to.equal(401);
    expect((await h.api.post(`/api/v1/sessions/${id}/messages`).send({ message: 'x' })).status).to.equal(401);
  });
});
