import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { startFakeOpenAi } from '../helpers/fake-openai.js';

/** A model endpoint that answers 429 or 503 with Retry-After: the process waits, it does not fail or storm. */
describe('back-pressure from model endpoints', function () {
  this.timeout(30_000);
  let busy: Awaited<ReturnType<typeof startFakeOpenAi>>;
  let calm: Awaited<ReturnType<typeof startFakeOpenAi>>;
  let h: Harness;
  let t: Tenant;

  before(async () => {
    busy = await startFakeOpenAi();
    calm = await startFakeOpenAi();
    h = await createHarness({
      env: { OPENAI_BASE_URL: busy.baseUrl, OPENAI_MODEL: 'm', OPENAI_MAX_RETRIES: '2', OPENAI_TIMEOUT_MS: '5000', MODELS_ALLOW_PRIVATE: 'true' },
      options: { runOnNewWork: false, dispatchOnAccept: false, runtime: { concurrency: 10 } },
    });
    t = await h.tenant({ slug: 'oracle' });
    await h.services.scribes.setAgent(t.organizationId, 'oracle', { agent: 'openai' });
    await h.services.scribes.create({ organizationId: t.organizationId, slug: 'elsewhere', name: 'Elsewhere', agent: 'openai' });
    await h.services.scribes.setAgent(t.organizationId, 'elsewhere', { baseUrl: calm.baseUrl });
  });
  after(async () => {
    await h.close();
    await busy.close();
    await calm.close();
  });

  const chat = async (slug: string, message: string): Promise<string> => {
    const res = await h.api.post(`/api/v1/scribes/${slug}/chat`).set(t.headers).send({ message });
    expect(res.status).to.equal(202);
    return res.body.session_id;
  };

  it('pauses an endpoint that answers 429 for the whole process: every run waits, none fails, the endpoint sees no storm, and other endpoints go on', async () => {
    const runs = 8;
    for (let i = 0; i < runs; i++) busy.script({ reply: `Answer ${i}` });
    calm.script({ reply: 'No waiting here.' });
    const ids = [];
    for (let i = 0; i < runs; i++) ids.push(await chat('oracle', `Question ${i}`));
    const other = await chat('elsewhere', 'Are you busy?');
    // The 2.5 s of refusals start with the runs, however long the chats took to send.
    const refused = busy.overload(2_500, 429, { 'retry-after': '1' });
    await h.services.runtime.tick();

    const sessions = await h.db('sessions').whereIn('id', [...ids, other]);
    expect(sessions.map((s) => s.state)).to.deep.equal(sessions.map(() => 'waiting'));
    expect(busy.seen, 'each run answered once the endpoint took calls again').to.have.length(runs);
    // The first calls of all runs, then about one probe a second while the endpoint refused.
    expect(refused())
      .to.be.at.least(runs)
      .and.at.most(runs + 4);

    const trace = await h.services.traces.of({ sessionId: ids[0]! });
    const waits = trace.filter((c) => c.error?.startsWith('the model endpoint answered HTTP 429; waited '));
    expect(waits.length, JSON.stringify(trace)).to.be.at.least(1);
    expect(trace.at(-1)).to.include({ kind: 'model', error: null });
    // The calm endpoint's session finished long before the busy endpoint took calls again.
    const byId = new Map(sessions.map((s) => [s.id, s.updated_at as string]));
    const lastBusy = ids
      .map((id) => byId.get(id)!)
      .sort()
      .at(-1)!;
    expect(Date.parse(lastBusy) - Date.parse(byId.get(other)!)).to.be.greaterThan(1_000);
  });

  it('waits out a 503 with Retry-After the same way', async () => {
    busy.script({ reply: 'Back now.' });
    const id = await chat('oracle', 'Hello after the outage');
    const refused = busy.overload(600, 503, { 'retry-after-ms': '300' });
    await h.services.runtime.tick();
    expect(await h.db('sessions').where({ id }).first()).to.include({ state: 'waiting', error_message: null });
    expect(refused()).to.be.at.least(1).and.at.most(4);
  });

  it('still fails a 429 without Retry-After once the retries are used up', async () => {
    const refused = busy.overload(60_000, 429, {});
    try {
      const id = await chat('oracle', 'No hint');
      await h.services.runtime.tick();
      expect(await h.db('sessions').where({ id }).first()).to.include({ state: 'failed', error_message: 'the model endpoint answered HTTP 429: overloaded' });
      expect(refused()).to.equal(3);
    } finally {
      busy.overload(0, 200, {});
    }
  });
});
