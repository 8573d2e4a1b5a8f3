import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { DEFAULT_USAGE, startFakeOpenAi } from '../helpers/fake-openai.js';
import { signIn } from '../helpers/console.js';
import { createTrace, presentTrace, traceTotals } from '../../src/agents/trace.js';
import { runWrites } from '../../src/runtime/run-writes.js';
import { groupCommits } from '../../src/db/group-commit.js';
import { statementsDuring, testDatabaseKind } from '../helpers/databases.js';

const SCRIBE_KEY = 'sk-scribe-own-key-7f3a9c';

describe('agent traces, usage, per-scribe model settings and limits', function () {
  this.timeout(20_000);
  let h: Harness;
  let fake: Awaited<ReturnType<typeof startFakeOpenAi>>;
  let own: Awaited<ReturnType<typeof startFakeOpenAi>>;
  let t: Tenant;

  before(async () => {
    fake = await startFakeOpenAi();
    own = await startFakeOpenAi();
    h = await createHarness({
      env: { OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: 'sk-env', OPENAI_MODEL: 'env-model', OPENAI_TIMEOUT_MS: '2000', OPENAI_MAX_RETRIES: '0', MODELS_ALLOW_PRIVATE: 'true' },
      options: { runOnNewWork: false, dispatchOnAccept: false },
    });
    t = await h.tenant({ slug: 'oracle' });
    await h.services.scribes.setAgent(t.organizationId, 'oracle', { agent: 'openai' });
    await h.services.entryTypes.create(t.organizationId, { name: 'Contacts', fields: [{ name: 'Name', type: 'text', primary: true }] });
  });
  after(async () => {
    await h.close();
    await fake.close();
    await own.close();
  });
  afterEach(async () => {
    fake.clear();
    await h.services.scribes.setAgent(t.organizationId, 'oracle', { model: null, baseUrl: null, apiKey: null, maxToolRounds: null, tokenBudget: null });
    fake.seen.length = 0;
    own.seen.length = 0;
  });

  async function chat(message: string): Promise<string> {
    const res = await h.api.post('/api/v1/scribes/oracle/chat').set(t.headers).send({ message });
    expect(res.status).to.equal(202);
    await h.services.runtime.tick();
    return res.body.session_id;
  }
  async function task(summary: string): Promise<string> {
    const res = await h.api
      .post('/api/v1/scribes/oracle/requests')
      .set(t.headers)
      .send({ task: { summary, acceptance_criteria: 'a note' } });
    await h.services.dispatcher.tick();
    await h.services.runtime.tick();
    return (await h.api.get(`/api/v1/requests/${res.body.request.id}`).set(t.headers)).body.request.entity_id;
  }

  it('records every model and tool call of a session in order, with the usage each response reported, and shows them', async () => {
    fake.script(
      { toolCalls: [{ name: 'search_entries', arguments: { query: 'Ada' } }], usage: { prompt_tokens: 200, completion_tokens: 15 } },
      { toolCalls: [{ name: 'reply', arguments: { text: 'Nobody called Ada yet.' } }], usage: { prompt_tokens: 260, completion_tokens: 12 } },
    );
    const id = await chat('Do we know Ada?');
    const calls = await h.services.traces.of({ sessionId: id });
    expect(calls.map((c) => [c.kind, c.name, c.input_tokens, c.output_tokens, c.error])).to.deep.equal([
      ['model', 'env-model', 200, 15, null],
      ['tool', 'search_entries', null, null, null],
      ['model', 'env-model', 260, 12, null],
      ['tool', 'reply', null, null, null],
    ]);
    expect(JSON.parse(calls[1]!.arguments!)).to.deep.equal({ query: 'Ada' });
    expect(JSON.parse(calls[1]!.result!)).to.deep.equal([]);
    expect(calls.every((c) => c.duration_ms >= 0 && c.scribe_id === t.scribe.id && c.organization_id === t.organizationId)).to.equal(true);
    expect(traceTotals(calls).usage).to.deep.equal({ input_tokens: 460, output_tokens: 27 });
    // As `session show` prints it (docs/agents.md, Traces).
    expect(presentTrace(calls)[1]).to.deep.equal({
      kind: 'tool',
      name: 'search_entries',
      duration_ms: calls[1]!.duration_ms,
      error: null,
      arguments: '{"query":"Ada"}',
      result: '[]',
    });

    const admin = await signIn(h, t, 'admin');
    const page = await admin.get(`/sessions/${id}`);
    expect(page.text).to.include('<p id="trace-totals">2 model calls, 2 tool calls,').and.include('460 input and 27 output tokens');
    expect(page.text).to.include('<code>search_entries</code>');
    const metrics = await h.api.get('/metrics');
    expect(metrics.text).to.include(`scribe_agent_model_calls{organization="${t.organizationId}",scribe="oracle"} 2`);
    expect(metrics.text).to.include(`scribe_agent_tokens{organization="${t.organizationId}",scribe="oracle",direction="input"} 460`);
  });

  it("stores a run's calls without holding the run up, in order; a call that cannot be stored is reported, the others kept", async () => {
    const other = await h.tenant({ slug: 'traced' });
    const errors: unknown[] = [];
    const store = runWrites(groupCommits(h.db), async () => []).call;
    const trace = createTrace(store, h.services.clock, { organizationId: other.organizationId, scribeId: other.scribe.id }, (err) => errors.push(err));
    const lost = createTrace(store, h.services.clock, { organizationId: other.organizationId, scribeId: '00000000-0000-4000-8000-000000000000' }, (err) => errors.push(err));
    const stored = () => h.db('agent_calls').where({ organization_id: other.organizationId }).orderBy('position').pluck('name');
    expect(trace.record({ kind: 'model', name: 'first', durationMs: 5 })).to.equal(undefined);
    lost.record({ kind: 'model', name: 'of no scribe', durationMs: 1 });
    trace.record({ kind: 'tool', name: 'second', durationMs: 1, arguments: { q: 1 } });
    trace.record({ kind: 'model', name: 'third', durationMs: 2 });
    await Promise.all([trace.stored(), lost.stored()]);
    expect(await stored()).to.deep.equal(['first', 'second', 'third']);
    expect(errors).to.have.length(1);
    expect(String((errors[0] as Error).message)).to.match(/foreign key/i);
  });

  it('stores the calls of all runs batch by batch: the first at once, those that come while it is written together next', async () => {
    const other = await h.tenant({ slug: 'grouped-traces' });
    const store = runWrites(groupCommits(h.db), async () => []).call;
    const traces = [0, 1, 2, 3].map(() =>
      createTrace(store, h.services.clock, { organizationId: other.organizationId, scribeId: other.scribe.id }, (err) => expect.fail(String(err))),
    );
    const { statements } = await statementsDuring(h.db, async () => {
      for (const [i, trace] of traces.entries()) {
        trace.record({ kind: 'model', name: `run ${i}, first`, durationMs: 1 });
        trace.record({ kind: 'tool', name: `run ${i}, second`, durationMs: 1 });
      }
      await Promise.all(traces.map((trace) => trace.stored()));
    });
    const inserts = statements.filter((statement) => /^insert into .agent_calls./i.test(statement.sql));
    // Eight calls: the first alone, then seven in one INSERT, or on SQLite in INSERTs of four and three (db/rows.ts, `piecesOf`).
    expect(inserts).to.have.length(testDatabaseKind === 'sqlite' ? 3 : 2);
    const rows = await h.db('agent_calls').where({ organization_id: other.organizationId }).orderBy('id').select('name', 'position');
    expect(rows.map((row) => `${row.name} @${row.position}`).sort()).to.deep.equal([0, 1, 2, 3].flatMap((i) => [`run ${i}, first @0`, `run ${i}, second @1`]).sort());
  });

  it("traces the builtin agent's tool calls too", async () => {
    const other = await h.tenant({ slug: 'plain' });
    const res = await h.api.post('/api/v1/scribes/plain/chat').set(other.headers).send({ message: 'Anything about Acme?' });
    await h.services.runtime.tick();
    const calls = await h.services.traces.of({ sessionId: res.body.session_id });
    expect(calls.length).to.be.greaterThan(0);
    expect(new Set(calls.map((c) => `${c.kind} ${c.name}`))).to.include('tool search_entries');
    // Under the names the openai agent gives the model: its workload is list_tasks.
    const status = await h.api.post('/api/v1/scribes/plain/chat').set(other.headers).send({ message: 'What are you working on?' });
    await h.services.runtime.tick();
    expect((await h.services.traces.of({ sessionId: status.body.session_id })).map((c) => `${c.kind} ${c.name}`)).to.deep.equal(['tool list_tasks']);
  });

  it("uses a scribe's own model, endpoint and key over the environment's, and never puts the key in a trace or a page", async () => {
    await h.services.scribes.setAgent(t.organizationId, 'oracle', { model: 'own-model', baseUrl: own.baseUrl, apiKey: SCRIBE_KEY });
    own.script({ reply: 'From my own endpoint.' });
    const id = await chat('Who serves you?');
    expect(fake.seen).to.have.length(0);
    expect(own.seen).to.have.length(1);
    expect(own.seen[0]!.headers.authorization).to.equal(`Bearer ${SCRIBE_KEY}`);
    expect(own.seen[0]!.body.model).to.equal('own-model');
    const calls = await h.services.traces.of({ sessionId: id });
    expect(calls.map((c) => c.name)).to.deep.equal(['own-model']);
    expect(JSON.stringify(await h.db('agent_calls'))).not.to.include(SCRIBE_KEY);
    const admin = await signIn(h, t, 'admin');
    for (const path of [`/sessions/${id}`, '/b/oracle', '/b/oracle/settings']) expect((await admin.get(path)).text, path).not.to.include(SCRIBE_KEY);
  });

  it('stops a looping model at the token budget, with a failure that says so', async () => {
    await h.services.scribes.setAgent(t.organizationId, 'oracle', { tokenBudget: 300 });
    const loop = { toolCalls: [{ name: 'search_entries', arguments: { query: 'more' } }] };
    fake.script(loop, loop, loop, loop);
    const taskId = await task('Find everything');
    const row = await h.db('tasks').where({ id: taskId }).first();
    const used = 3 * (DEFAULT_USAGE.prompt_tokens + DEFAULT_USAGE.completion_tokens);
    expect(row).to.include({ status: 'waiting', last_error: `the work used ${used} tokens, over its budget of 300` });
    expect(fake.seen, 'no call after the budget ran out').to.have.length(3);

    const calls = await h.services.traces.of({ taskId });
    expect(calls.filter((c) => c.kind === 'model')).to.have.length(3);
  });

  it("caps the rounds of tool calls at the scribe's maximum", async () => {
    await h.services.scribes.setAgent(t.organizationId, 'oracle', { maxToolRounds: 2 });
    const loop = { toolCalls: [{ name: 'search_entries', arguments: { query: 'again' } }] };
    fake.script(loop, loop, loop);
    const taskId = await task('Keep looking');
    expect(await h.db('tasks').where({ id: taskId }).first()).to.include({ status: 'waiting', last_error: 'the model did not finish within 2 rounds of tool calls' });
    expect(fake.seen).to.have.length(2);
  });

  it('records a failed model call in the trace with its error', async () => {
    fake.script({ status: 500, body: { error: { message: 'the GPU caught fire' } } });
    const id = await chat('Hello?');
    const calls = await h.services.traces.of({ sessionId: id });
    expect(calls.map((c) => [c.kind, c.error])).to.deep.equal([['model', 'the model endpoint answered HTTP 500: the GPU caught fire']]);
  });
});
