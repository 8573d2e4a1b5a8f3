import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { stored } from '../helpers/databases.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('POST /api/v1/scribes/:id/chat', () => {
  let h: Harness;
  let t: Tenant;
  before(async () => {
    // The runtime is driven by hand here, so each state can be seen.
    h = await createHarness({ options: { runOnNewWork: false } });
    t = await h.tenant();
  });
  after(() => h.close());

  const chat = (body: unknown, tenant = t, slug = tenant.scribe.slug) =>
    h.api
      .post(`/api/v1/scribes/${slug}/chat`)
      .set(tenant.headers)
      .send(body as object);
  const sessionCount = async () => Number((await h.db('sessions').count({ n: '*' }).first())!.n);
  const transcript = (id: string) => h.db('session_messages').where({ session_id: id }).orderBy('id').select('author', 'text');

  async function expectRefused(res: { status: number; body: unknown }, status: number, error: string, before: number) {
    expect(res.status).to.equal(status);
    expect(res.body).to.deep.equal({ error });
    expect(await sessionCount(), 'no session stored').to.equal(before);
  }

  it('answers 202 with only a session_id and stores a queued session holding the message', async () => {
    const res = await chat({ message: 'Hello there' });
    expect(res.status).to.equal(202);
    expect(res.headers['content-type']).to.equal('application/json; charset=utf-8');
    expect(Object.keys(res.body)).to.deep.equal(['session_id']);
    expect(res.body.session_id).to.match(UUID);
    const session = await h.db('sessions').where({ id: res.body.session_id }).first();
    expect(session).to.include({ organization_id: t.organizationId, scribe_id: t.scribe.id, state: 'queued', reply_due: stored(true), error_message: null });
    expect(await transcript(res.body.session_id)).to.deep.equal([{ author: 'user', text: 'Hello there' }]);
  });

  it('creates a new session for every call, also with the same message', async () => {
    const a = await chat({ message: 'same' });
    const b = await chat({ message: 'same' });
    expect(a.body.session_id).to.not.equal(b.body.session_id);
  });

  it('accepts an omitted, null or empty message, and an empty body', async () => {
    for (const body of [{}, { message: null }, { message: '' }, undefined]) {
      const res = await chat(body);
      expect(res.status, JSON.stringify(body)).to.equal(202);
      expect(await transcript(res.body.session_id)).to.deep.equal([{ author: 'user', text: '' }]);
    }
  });

  it('stores half an emoji (a lone surrogate, as JSON can write it) as U+FFFD, the same on either database, and a whole one as it is', async () => {
    const res = await h.api
      .post(`/api/v1/scribes/${t.scribe.slug}/chat`)
      .set(t.headers)
      .set('Content-Type', 'application/json')
      .send('{"message":"lone \\ud800 and \\udc00 halves, a whole \\ud83d\\ude00"}');
    expect(res.status).to.equal(202);
    expect(await transcript(res.body.session_id)).to.deep.equal([{ author: 'user', text: 'lone \ufffd and \ufffd halves, a whole 😀' }]);
  });

  it('ignores unknown fields', async () => {
    expect((await chat({ message: 'hi', colour: 'blue' })).status).to.equal(202);
  });

  it('marks the session completed at once with end_session_immediately, and still answers it', async () => {
    const res = await chat({ message: 'One-off: what are you working on?', end_session_immediately: true });
    expect(res.status).to.equal(202);
    const id = res.body.session_id;
    expect(await h.db('sessions').where({ id }).first()).to.include({ state: 'completed', reply_due: stored(true) });
    await h.services.runtime.tick();
    expect(await h.db('sessions').where({ id }).first()).to.include({ state: 'completed', reply_due: stored(false), error_message: null });
    const messages = await transcript(id);
    expect(messages.map((m) => m.author)).to.deep.equal(['user', 'scribe']);
    expect(messages[1]!.text).to.match(/^I have no tasks yet|^My tasks:/);
  });

  it('without end_session_immediately, the session runs and waits for the next message once answered', async () => {
    const res = await chat({ message: 'hello', end_session_immediately: false });
    const id = res.body.session_id;
    expect((await h.db('sessions').where({ id }).first()).state).to.equal('queued');
    await h.services.runtime.tick();
    expect(await h.db('sessions').where({ id }).first()).to.include({ state: 'waiting', reply_due: stored(false) });
    expect((await transcript(id)).map((m) => m.author)).to.deep.equal(['user', 'scribe']);
  });

  for (const state of ['powered_off', 'unprovisioned']) {
    it(`keeps a message to a ${state} scribe queued until the scribe is active again`, async () => {
      const sleeper = await h.tenant({ slug: `sleeper-${state.replace('_', '-')}`, state });
      const res = await chat({ message: 'are you there?' }, sleeper);
      expect(res.status).to.equal(202);
      const id = res.body.session_id;
      await h.services.runtime.tick();
      expect(await h.db('sessions').where({ id }).first()).to.include({ state: 'queued', reply_due: stored(true) });
      expect(await transcript(id)).to.have.length(1);

      await h.services.scribes.setState(sleeper.organizationId, sleeper.scribe.slug, 'active');
      await h.services.runtime.tick();
      expect(await h.db('sessions').where({ id }).first()).to.include({ state: 'waiting', reply_due: stored(false) });
      expect((await transcript(id)).map((m) => m.author)).to.deep.equal(['user', 'scribe']);
    });
  }

  describe('errors, in the documented order', () => {
    it('401 "API key is required" without a key, before anything else', async () => {
      const before = await sessionCount();
      const res = await h.api.post('/api/v1/scribes/no-such/chat').set('Content-Type', 'application/json').send('{bad');
      await expectRefused(res, 401, 'API key is required', before);
    });

    it('401 "Invalid API key" for an unknown or revoked key', async () => {
      const before = await sessionCount();
      await expectRefused(await h.api.post(`/api/v1/scribes/${t.scribe.slug}/chat`).set('X-Api-Key', 'sk_nope').send({ message: 'x' }), 401, 'Invalid API key', before);
      const other = await h.tenant({ slug: 'revoked-chat' });
      await h.services.organizations.revokeApiKey(other.keyId);
      await expectRefused(await chat({ message: 'x' }, other), 401, 'Invalid API key', before);
    });

    it('404 "Scribe not found" for an unknown slug, an invalid slug and another organization\'s scribe', async () => {
      const before = await sessionCount();
      await expectRefused(await chat({ message: 'x' }, t, 'no-such-scribe'), 404, 'Scribe not found', before);
      await expectRefused(await chat({ message: 'x' }, t, 'Not_A_Slug'), 404, 'Scribe not found', before);
      const other = await h.tenant({ slug: 'elsewhere' });
      await expectRefused(await chat({ message: 'x' }, t, other.scribe.slug), 404, 'Scribe not found', before);
    });

    it('404 before 400: a malformed body to an unknown scribe', async () => {
      const before = await sessionCount();
      const res = await h.api.post('/api/v1/scribes/no-such/chat').set(t.headers).set('Content-Type', 'application/json').send('{bad');
      await expectRefused(res, 404, 'Scribe not found', before);
    });

    it('400 "Invalid JSON body" and 413 "Request body too large"', async () => {
      const before = await sessionCount();
      const bad = await h.api.post(`/api/v1/scribes/${t.scribe.slug}/chat`).set(t.headers).set('Content-Type', 'application/json').send('{"message": ');
      await expectRefused(bad, 400, 'Invalid JSON body', before);
      const big = await chat({ message: 'x'.repeat(1024 * 1024 + 1) });
      await expectRefused(big, 413, 'Request body too large', before);
    });

    const invalid: Array<[unknown, string]> = [
      [{ message: 42 }, 'message must be a string'],
      [{ message: ['hi'] }, 'message must be a string'],
      [{ message: { text: 'hi' } }, 'message must be a string'],
      [{ end_session_immediately: 'true' }, 'end_session_immediately must be a boolean'],
      [{ end_session_immediately: 1 }, 'end_session_immediately must be a boolean'],
      [{ message: 42, end_session_immediately: 'yes' }, 'message must be a string'],
      [{ message: 'hi\u0000' }, 'message must not contain U+0000'],
      [[{ message: 'hi' }], 'Request body must be a JSON object'],
      ['hi', 'Request body must be a JSON object'],
    ];
    for (const [body, error] of invalid) {
      it(`422 "${error}" for ${JSON.stringify(body)}`, async () => {
        const before = await sessionCount();
        const res = await h.api.post(`/api/v1/scribes/${t.scribe.slug}/chat`).set(t.headers).set('Content-Type', 'application/json').send(JSON.stringify(body));
        await expectRefused(res, 422, error, before);
      });
    }
  });
});
