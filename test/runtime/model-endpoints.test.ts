import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { startFakeOpenAi } from '../helpers/fake-openai.js';
import { signIn } from '../helpers/console.js';

const ENV_KEY = 'sk-operator-env-key-5d1e';
const SCRIBE_KEY = 'sk-scribe-own-key-93ab';
const PRIVATE = 'Base URL must not point at a private or local address (MODELS_ALLOW_PRIVATE=true allows it)';

/** Who may be sent what: the environment's endpoint and key are the operator's; a scribe's own endpoint is staff's. */
describe("scribes' own model endpoints: the address policy and the operator's key", function () {
  this.timeout(20_000);
  let operator: Awaited<ReturnType<typeof startFakeOpenAi>>;
  let listener: Awaited<ReturnType<typeof startFakeOpenAi>>;

  before(async () => {
    operator = await startFakeOpenAi();
    listener = await startFakeOpenAi();
  });
  after(async () => {
    await operator.close();
    await listener.close();
  });
  afterEach(() => {
    for (const fake of [operator, listener]) {
      fake.clear();
      fake.seen.length = 0;
      fake.hits.count = 0;
    }
  });

  function harness(env: Record<string, string> = {}) {
    return createHarness({
      env: { OPENAI_BASE_URL: operator.baseUrl, OPENAI_API_KEY: ENV_KEY, OPENAI_MODEL: 'env-model', OPENAI_MAX_RETRIES: '0', OPENAI_TIMEOUT_MS: '2000', ...env },
      options: { runOnNewWork: false, dispatchOnAccept: false },
    });
  }

  async function chat(h: Harness, t: Tenant, message: string): Promise<string> {
    const res = await h.api.post(`/api/v1/scribes/oracle/chat`).set(t.headers).send({ message });
    expect(res.status).to.equal(202);
    await h.services.runtime.tick();
    return res.body.session_id;
  }

  async function task(h: Harness, t: Tenant, summary: string): Promise<string> {
    const res = await h.api.post(`/api/v1/scribes/oracle/requests`).set(t.headers).send({ task: { summary } });
    expect(res.status).to.equal(202);
    await h.services.dispatcher.tick();
    await h.services.runtime.tick();
    return (await h.db('requests').where({ id: res.body.request.id }).first()).entity_id;
  }

  const sessionOf = (h: Harness, id: string) => h.db('sessions').where({ id }).first();

  describe("with MODELS_ALLOW_PRIVATE=true (a model server on the team's own network)", () => {
    let h: Harness;
    let t: Tenant;
    before(async () => {
      h = await harness({ MODELS_ALLOW_PRIVATE: 'true' });
      t = await h.tenant({ slug: 'oracle' });
    });
    after(() => h.close());
    beforeEach(() => h.services.scribes.setAgent(t.organizationId, 'oracle', { agent: 'openai', model: null, baseUrl: null, apiKey: null }));

    it("never sends the environment's key to a scribe's own base URL: every call there carries no key", async () => {
      await h.services.scribes.setAgent(t.organizationId, 'oracle', { baseUrl: listener.baseUrl });
      for (let i = 0; i < 6; i++) listener.script({ reply: `Reply ${i}` });
      for (let i = 0; i < 3; i++) listener.script({ toolCalls: [{ name: 'complete_task', arguments: { result: `Done ${i}` } }] });
      const sessions = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => chat(h, t, `Hello ${i}`)));
      const tasks = [];
      for (let i = 0; i < 3; i++) tasks.push(await task(h, t, `Task ${i}`));
      expect(listener.seen).to.have.length(9);
      for (const request of listener.seen) {
        expect(request.headers.authorization, 'no Authorization header').to.equal(undefined);
        expect(JSON.stringify(request.headers)).not.to.include(ENV_KEY);
      }
      expect(operator.hits.count, "nothing went to the environment's endpoint").to.equal(0);
      for (const id of sessions) expect(await sessionOf(h, id)).to.include({ state: 'waiting', error_message: null });
      for (const id of tasks) expect(await h.db('tasks').where({ id }).first()).to.include({ status: 'done' });
    });

    it("sends a scribe's own key to its own base URL, and its own key (not the environment's) to the environment's endpoint when it sets no URL", async () => {
      await h.services.scribes.setAgent(t.organizationId, 'oracle', { baseUrl: listener.baseUrl, apiKey: SCRIBE_KEY });
      listener.script({ reply: 'Mine.' });
      await chat(h, t, 'Whose key?');
      expect(listener.seen.map((r) => r.headers.authorization)).to.deep.equal([`Bearer ${SCRIBE_KEY}`]);

      await h.services.scribes.setAgent(t.organizationId, 'oracle', { baseUrl: null });
      operator.script({ reply: 'Theirs.' });
      await chat(h, t, 'And now?');
      expect(operator.seen.map((r) => r.headers.authorization)).to.deep.equal([`Bearer ${SCRIBE_KEY}`]);

      await h.services.scribes.setAgent(t.organizationId, 'oracle', { apiKey: null });
      operator.script({ reply: "The operator's." });
      await chat(h, t, 'And with no key of its own?');
      expect(operator.seen.map((r) => r.headers.authorization)).to.deep.equal([`Bearer ${SCRIBE_KEY}`, `Bearer ${ENV_KEY}`]);
    });

    it('shows what an endpoint answered with its error cut to 300 characters, whether JSON or text', async () => {
      await h.services.scribes.setAgent(t.organizationId, 'oracle', { baseUrl: listener.baseUrl });
      const leak = `INTERNAL-DATA-LEAK db_password=hunter2 ${'x'.repeat(5000)}`;
      listener.script({ status: 500, text: leak });
      const text = await chat(h, t, 'Text error');
      expect((await sessionOf(h, text)).error_message).to.equal(`the model endpoint answered HTTP 500: ${leak.slice(0, 300)}`);
      listener.script({ status: 502, body: { error: { message: `é${'y'.repeat(400)}` } } });
      const json = await chat(h, t, 'JSON error');
      expect((await sessionOf(h, json)).error_message).to.equal(`the model endpoint answered HTTP 502: é${'y'.repeat(299)}`);
    });

    it("does not follow a redirect from a scribe's own endpoint", async () => {
      await h.services.scribes.setAgent(t.organizationId, 'oracle', { baseUrl: listener.baseUrl });
      listener.script({ status: 307, text: '', headers: { location: `${operator.baseUrl}/chat/completions` } });
      const id = await chat(h, t, 'Follow me');
      expect(listener.hits.count).to.equal(1);
      expect(operator.hits.count).to.equal(0);
      expect(await sessionOf(h, id)).to.include({ state: 'failed', error_message: 'the model endpoint could not be reached' });
    });

    it("follows a redirect from the environment's endpoint, the operator's, as fetch does, sending the call again to where it leads", async () => {
      await h.services.scribes.setAgent(t.organizationId, 'oracle', { baseUrl: null, apiKey: null });
      const moved = { status: 307, text: '', headers: { location: `${listener.baseUrl}/chat/completions` } };
      // Asked directly first, then again through the dispatcher that follows redirects.
      operator.script(moved, moved);
      listener.script({ reply: 'Answered where it led.' });
      const id = await chat(h, t, 'Follow me');
      expect(operator.hits.count).to.equal(2);
      expect(listener.hits.count).to.equal(1);
      expect(listener.seen[0]!.body.messages.at(-1)).to.deep.include({ role: 'user', content: 'Follow me' });
      const reply = await h.db('session_messages').where({ session_id: id, author: 'scribe' }).first();
      expect(reply.text).to.equal('Answered where it led.');
    });
  });

  describe('by default (only public addresses)', () => {
    let h: Harness;
    let t: Tenant;
    before(async () => {
      h = await harness();
      t = await h.tenant({ slug: 'oracle' });
      await h.services.scribes.setAgent(t.organizationId, 'oracle', { agent: 'openai' });
    });
    after(() => h.close());

    it('refuses every non-public form of a base URL at save, in the console too, and keeps the setting it had', async () => {
      await h.services.scribes.setAgent(t.organizationId, 'oracle', { baseUrl: 'https://models.example.com/v1' });
      const forms = [
        'http://169.254.169.254/latest/',
        'http://127.0.0.1:11434/v1',
        'http://127.1/v1',
        'http://2130706433/v1',
        'http://0x7f.0.0.1/v1',
        'http://[::1]:8080/v1',
        'http://[::ffff:127.0.0.1]/v1',
        'http://[::ffff:a9fe:a9fe]/v1',
        'http://[fe80::1]/v1',
        'http://[fd00::1]/v1',
        'http://[64:ff9b::a00:1]/v1',
        'http://10.0.0.8/v1',
        'http://172.16.5.4/v1',
        'http://192.168.1.1/v1',
        'http://100.64.0.1/v1',
        'http://0.0.0.0/v1',
      ];
      for (const url of forms) {
        let error: Error | undefined;
        await h.services.scribes.setAgent(t.organizationId, 'oracle', { baseUrl: url }).catch((err: Error) => (error = err));
        expect(error?.message, url).to.equal(PRIVATE);
      }
      const admin = await signIn(h, t, 'admin');
      const res = await admin.post('/b/oracle/agent', {
        agent: 'openai',
        instructions: '',
        model: '',
        base_url: 'http://169.254.169.254/latest/',
        api_key: '',
        max_tool_rounds: '',
        token_budget: '',
      });
      expect(res.status).to.equal(303);
      expect((await admin.get('/b/oracle/settings')).text).to.include(PRIVATE);
      expect((await h.db('scribes').where({ slug: 'oracle', organization_id: t.organizationId }).first()).model_base_url).to.equal('https://models.example.com/v1');
    });

    it('refuses at connect a host name that resolves to loopback: the listener hears nothing', async () => {
      await h.services.scribes.setAgent(t.organizationId, 'oracle', { baseUrl: `http://localhost:${listener.port}/v1` });
      listener.script({ reply: 'You should not see this.' });
      const id = await chat(h, t, 'Hello?');
      expect(await sessionOf(h, id)).to.include({ state: 'failed', error_message: 'the model endpoint could not be reached: address not allowed' });
      expect(listener.hits.count).to.equal(0);
    });

    it('refuses at connect an address stored before the policy existed', async () => {
      await h
        .db('scribes')
        .where({ slug: 'oracle', organization_id: t.organizationId })
        .update({ model_base_url: `http://127.0.0.1:${listener.port}/v1` });
      const id = await task(h, t, 'Reach the metadata service');
      expect(await h.db('tasks').where({ id }).first()).to.include({ status: 'waiting', last_error: 'the model endpoint could not be reached: address not allowed' });
      expect(listener.hits.count).to.equal(0);
    });

    it("calls the environment's endpoint as the operator set it, private or not", async () => {
      await h.services.scribes.setAgent(t.organizationId, 'oracle', { baseUrl: null });
      operator.script({ reply: 'Operator here.' });
      const id = await chat(h, t, 'Hi');
      expect(await sessionOf(h, id)).to.include({ state: 'waiting', error_message: null });
      expect(operator.seen.map((r) => r.headers.authorization)).to.deep.equal([`Bearer ${ENV_KEY}`]);
    });
  });
});
