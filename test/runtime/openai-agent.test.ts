import { expect } from 'chai';
import { createHarness, eventually, staffOf, type Harness, type Tenant } from '../helpers/harness.js';
import { stored } from '../helpers/databases.js';
import { startFakeOpenAi } from '../helpers/fake-openai.js';
import { runtimeWith } from '../helpers/agent-runtime.js';
import { createOpenAiAgent } from '../../src/agents/openai.js';
import { createLogger } from '../../src/logger.js';
import { anyAddress } from '../../src/net/address-policy.js';
import { createGuardedLeanFetch } from '../../src/net/guarded-agent.js';

describe('the openai agent, against a local server speaking the protocol', () => {
  let h: Harness;
  let fake: Awaited<ReturnType<typeof startFakeOpenAi>>;
  let t: Tenant;
  let contactsId: string;

  before(async () => {
    fake = await startFakeOpenAi();
    h = await createHarness({
      env: { OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: 'sk-test', OPENAI_MODEL: 'test-model', OPENAI_TIMEOUT_MS: '300', OPENAI_MAX_RETRIES: '1' },
      options: { runOnNewWork: false, dispatchOnAccept: false },
    });
    t = await h.tenant({ slug: 'oracle' });
    await h.services.scribes.setAgent(t.organizationId, 'oracle', { agent: 'openai', instructions: 'Answer like a librarian.' });
    contactsId = (
      await h.services.entryTypes.create(t.organizationId, {
        name: 'Contacts',
        fields: [
          { name: 'Name', type: 'text', primary: true },
          { name: 'Age', type: 'number' },
        ],
      })
    ).id;
  });
  after(async () => {
    await h.close();
    await fake.close();
  });
  beforeEach(() => {
    fake.seen.length = 0;
  });

  async function chat(message: string, extra: object = {}): Promise<string> {
    const res = await h.api
      .post('/api/v1/scribes/oracle/chat')
      .set(t.headers)
      .send({ message, ...extra });
    expect(res.status).to.equal(202);
    await h.services.runtime.tick();
    return res.body.session_id;
  }
  const session = (id: string) => h.db('sessions').where({ id }).first();
  const transcript = (id: string) => h.db('session_messages').where({ session_id: id }).orderBy('id').select('author', 'text');

  it('sends the model, key, instructions and transcript, and records a plain reply', async () => {
    fake.script({ reply: 'Good morning. How may I help?' });
    const id = await chat('Good morning');
    expect(await session(id)).to.include({ state: 'waiting', error_message: null });
    expect(await transcript(id)).to.deep.equal([
      { author: 'user', text: 'Good morning' },
      { author: 'scribe', text: 'Good morning. How may I help?' },
    ]);
    const [request] = fake.seen;
    expect(request!.headers.authorization).to.equal('Bearer sk-test');
    expect(request!.body.model).to.equal('test-model');
    expect(request!.body.messages[0]!.role).to.equal('system');
    expect(request!.body.messages[0]!.content).to.include('You are oracle').and.include('Your instructions:\nAnswer like a librarian.');
    expect(request!.body.messages.slice(1)).to.deep.equal([{ role: 'user', content: 'Good morning' }]);
    expect(request!.body.tools!.map((tool) => tool.function.name)).to.deep.equal(['list_entry_types', 'search_entries', 'create_entry', 'update_entry', 'list_tasks', 'reply']);
  });

  it('runs a tool call that creates an entry through the entry service, returns its result to the model, then replies', async () => {
    fake.script(
      { toolCalls: [{ name: 'create_entry', arguments: { entry_type: 'contacts', fields: { Name: 'Ada Lovelace', Age: 36 } } }] },
      { toolCalls: [{ name: 'reply', arguments: { text: 'I added Ada Lovelace to Contacts.' } }] },
    );
    const id = await chat('Please add Ada Lovelace, 36, to contacts');
    const rows = await h.db('entries').where({ entry_type_id: contactsId });
    expect(rows).to.have.length(1);
    expect(JSON.parse(rows[0].fields)).to.deep.equal({ Name: 'Ada Lovelace', Age: 36 });
    expect(rows[0].organization_id).to.equal(t.organizationId);
    const toolMessage = fake.seen[1]!.body.messages.at(-1)!;
    expect(toolMessage.role).to.equal('tool');
    expect(toolMessage.tool_call_id).to.equal(fake.seen[1]!.body.messages.at(-2)!.tool_calls && (fake.seen[1]!.body.messages.at(-2)!.tool_calls as Array<{ id: string }>)[0]!.id);
    expect(JSON.parse(toolMessage.content!)).to.include({ id: rows[0].id, entry_type_id: contactsId });
    expect((await transcript(id)).at(-1)).to.deep.equal({ author: 'scribe', text: 'I added Ada Lovelace to Contacts.' });
    expect((await session(id)).state).to.equal('waiting');
  });

  it('hands refused tool calls back to the model as errors, so it can correct itself', async () => {
    fake.script(
      { toolCalls: [{ name: 'create_entry', arguments: '{not json' }] },
      { toolCalls: [{ name: 'create_entry', arguments: { entry_type: 'Contacts', fields: { Age: 'old' } } }] },
      { toolCalls: [{ name: 'search_entries', arguments: { query: 'Age>' } }] },
      { toolCalls: [{ name: 'no_such_tool', arguments: {} }] },
      { reply: 'Sorry, I could not do that.' },
    );
    const id = await chat('add someone');
    const toolResults = fake.seen.slice(1).map((r) => JSON.parse(r.body.messages.at(-1)!.content!));
    expect(toolResults[0]).to.deep.equal({ error: 'arguments are not valid JSON' });
    expect(toolResults[1].error)
      .to.be.a('string')
      .and.match(/Age|Name/);
    expect(toolResults[2].error).to.match(/^Invalid search query: /);
    expect(toolResults[3]).to.deep.equal({ error: 'unknown tool' });
    expect((await transcript(id)).at(-1)).to.deep.equal({ author: 'scribe', text: 'Sorry, I could not do that.' });
    expect(await h.db('entries').where({ entry_type_id: contactsId }).count({ n: '*' }).first()).to.deep.equal({ n: 1 });
  });

  it('hands a finishing or writing tool call without its text back to the model as refused, and records only the answer that has it', async () => {
    fake.script(
      { toolCalls: [{ name: 'reply', arguments: {} }] },
      { toolCalls: [{ name: 'reply', arguments: { text: '   ', end_session: true } }] },
      { toolCalls: [{ name: 'create_entry', arguments: { fields: { Name: 'Nobody' } } }] },
      { toolCalls: [{ name: 'update_entry', arguments: { id: '', archived: true } }] },
      { toolCalls: [{ name: 'reply', arguments: { text: 'Here it is.' } }] },
    );
    const id = await chat('answer me');
    const toolResults = fake.seen.slice(1).map((r) => JSON.parse(r.body.messages.at(-1)!.content!));
    expect(toolResults).to.deep.equal([{ error: 'text is required' }, { error: 'text is required' }, { error: 'entry_type is required' }, { error: 'id is required' }]);
    expect(await session(id)).to.include({ state: 'waiting', error_message: null });
    expect(await transcript(id)).to.deep.equal([
      { author: 'user', text: 'answer me' },
      { author: 'scribe', text: 'Here it is.' },
    ]);
  });

  it("fails an answer cut at the model's length limit, or withheld by its filter, rather than record it as whole", async () => {
    fake.script({ reply: 'This answer was cut by max tok', chunks: 3, finish: 'length' }, { reply: 'Withheld', finish: 'content_filter' });
    for (const error of ["the model's answer was cut off at its length limit (finish_reason length)", 'the model endpoint withheld its answer (finish_reason content_filter)']) {
      const id = await chat('write a long answer');
      expect(await session(id)).to.include({ state: 'failed', error_message: error });
      expect(await h.db('session_messages').where({ session_id: id }).orderBy('id').select('author', 'text', 'partial')).to.deep.equal([
        { author: 'user', text: 'write a long answer', partial: stored(false) },
        { author: 'system', text: `The scribe could not answer: ${error}`, partial: stored(false) },
      ]);
    }
  });

  it('says in words what was wrong with a streamed answer that broke off, ended unfinished, could not be read, or carried an error', async () => {
    const chunk = (delta: object, finish: string | null = null) =>
      JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 1, model: 'test-model', choices: [{ index: 0, delta, finish_reason: finish }] });
    const begun = [chunk({ role: 'assistant', content: '' }), chunk({ content: 'The answer begins' })];
    const cases: Array<[Parameters<typeof fake.script>[0], string | RegExp]> = [
      [{ events: begun, ending: 'break' }, 'the model endpoint broke off its answer: connection reset'],
      [{ events: begun }, "the model endpoint's answer ended before it was finished"],
      [{ events: [] }, "the model endpoint's answer ended before it was finished"],
      [{ events: [...begun, '{not json'] }, /^the model endpoint's answer could not be read: .*JSON/],
      [{ events: [...begun, JSON.stringify({ error: { message: 'upstream overloaded' } })] }, 'the model endpoint answered with an error: upstream overloaded'],
    ];
    for (const [step, error] of cases) {
      fake.script(step);
      const id = await chat('hello?');
      const row = await session(id);
      expect(row.state, JSON.stringify(step)).to.equal('failed');
      if (typeof error === 'string') expect(row.error_message, JSON.stringify(step)).to.equal(error);
      else expect(row.error_message, JSON.stringify(step)).to.match(error);
      expect(await transcript(id)).to.deep.equal([
        { author: 'user', text: 'hello?' },
        { author: 'system', text: `The scribe could not answer: ${row.error_message}` },
      ]);
    }
    // Each was asked once: an answer that had begun is not asked for again.
    expect(fake.seen).to.have.length(cases.length);
  });

  it('completes the session when the model ends it with the reply tool', async () => {
    fake.script({ toolCalls: [{ name: 'reply', arguments: { text: 'Goodbye.', end_session: true } }] });
    const id = await chat('That is all, thanks');
    expect(await session(id)).to.include({ state: 'completed', error_message: null });
  });

  it('retries after a 429 and succeeds', async () => {
    fake.script({ status: 429, headers: { 'retry-after-ms': '10' }, body: { error: { message: 'slow down' } } }, { reply: 'Here I am.' });
    const id = await chat('hello?');
    expect(fake.seen).to.have.length(2);
    expect(await session(id)).to.include({ state: 'waiting', error_message: null });
    expect((await transcript(id)).at(-1)).to.deep.equal({ author: 'scribe', text: 'Here I am.' });
  });

  it("records a timeout as the session's failure once the retries are used up", async () => {
    fake.script({ hang: true }, { hang: true });
    const id = await chat('hello?');
    expect(fake.seen).to.have.length(2);
    expect(await session(id)).to.include({ state: 'failed', error_message: 'the model endpoint timed out after 0.3s' });
    expect((await transcript(id)).at(-1)).to.deep.equal({ author: 'system', text: 'The scribe could not answer: the model endpoint timed out after 0.3s' });
  });

  it('records a stream that stalls mid-answer as a timeout, and keeps nothing of what the model had written', async () => {
    fake.script({ reply: 'The answer begins, and then', chunks: 4, holdAt: 2 });
    const res = await h.api.post('/api/v1/scribes/oracle/chat').set(t.headers).send({ message: 'hello?' });
    const id = res.body.session_id;
    const ticking = h.services.runtime.tick();
    await eventually(async () => (await h.db('session_messages').where({ session_id: id, partial: true }).first()) as object | undefined);
    await ticking;
    fake.release();
    expect(await session(id)).to.include({ state: 'failed', error_message: 'the model endpoint timed out after 0.3s' });
    expect(await h.db('session_messages').where({ session_id: id }).orderBy('id').select('author', 'text', 'partial')).to.deep.equal([
      { author: 'user', text: 'hello?', partial: stored(false) },
      { author: 'system', text: 'The scribe could not answer: the model endpoint timed out after 0.3s', partial: stored(false) },
    ]);
  });

  it('ends an answer that outlasts its deadline, however steadily the model writes it, and records why', async () => {
    const scribeEndpointFetch = createGuardedLeanFetch(anyAddress);
    const agent = createOpenAiAgent(h.config.openai, createLogger('silent'), { deadlineMs: 500, endpointFetch: fetch, scribeEndpointFetch, secrets: h.services.secrets });
    const runtime = runtimeWith(h, agent);
    // Fifteen pieces 100 ms apart: never quiet for the endpoint's 0.3 s, with room for a busy
    // machine's late timers (at 150 ms apart one gap passed 0.3 s under a loaded CI run), but 1.5 s in all.
    fake.script({ reply: 'A long answer, written slowly but steadily, piece by piece.', chunks: 15, chunkDelayMs: 100 });
    const abandoned = fake.hits.abandoned;
    const res = await h.api.post('/api/v1/scribes/oracle/chat').set(t.headers).send({ message: 'Tell me everything.' });
    const started = performance.now();
    expect(await runtime.tick()).to.deep.equal({ sessions: 1, tasks: 0 });
    expect(performance.now() - started).to.be.below(1200);
    // The model server sees the call go (its socket's close may come just after the run's end).
    await eventually(async () => (fake.hits.abandoned === abandoned + 1 ? true : undefined));
    expect(await session(res.body.session_id)).to.include({ state: 'failed', error_message: 'the work took longer than 0.5s' });
    expect(await transcript(res.body.session_id)).to.deep.equal([
      { author: 'user', text: 'Tell me everything.' },
      { author: 'system', text: 'The scribe could not answer: the work took longer than 0.5s' },
    ]);
    await scribeEndpointFetch.close();
  });

  it("records a server error with the endpoint's message after retrying", async () => {
    // A 500 (a 429 or 503 that names a wait is back-pressure instead: test/runtime/back-pressure.test.ts).
    fake.script(
      { status: 500, body: { error: { message: 'the GPU is on fire' } }, headers: { 'retry-after-ms': '5' } },
      { status: 500, body: { error: { message: 'the GPU is on fire' } } },
    );
    const id = await chat('hello?');
    expect(fake.seen).to.have.length(2);
    expect(await session(id)).to.include({ state: 'failed', error_message: 'the model endpoint answered HTTP 500: the GPU is on fire' });
  });

  it('does not retry a 400 beyond asking once more without a stream, and records it', async () => {
    // A 400 to a streamed request may be an endpoint that cannot stream: it is asked plainly once.
    fake.script({ status: 400, body: { error: { message: 'model not found' } } }, { status: 400, body: { error: { message: 'model not found' } } });
    const id = await chat('hello?');
    expect(fake.seen.map((r) => r.body.stream ?? false)).to.deep.equal([true, false]);
    expect((await session(id)).error_message).to.equal('the model endpoint answered HTTP 400: model not found');
  });

  it('fails a conversation that never finishes its tool calls', async () => {
    for (let i = 0; i < 8; i++) fake.script({ toolCalls: [{ name: 'list_tasks', arguments: {} }] });
    const id = await chat('loop');
    expect(fake.seen).to.have.length(8);
    expect((await session(id)).error_message).to.equal('the model did not finish within 8 rounds of tool calls');
  });

  describe('tasks', () => {
    async function task(input: object): Promise<string> {
      const res = await h.api.post('/api/v1/scribes/oracle/requests').set(t.headers).send({ task: input });
      await h.services.dispatcher.tick();
      const receipt = (await h.api.get(`/api/v1/requests/${res.body.request.id}`).set(t.headers)).body.request;
      await h.services.runtime.tick();
      return receipt.entity_id;
    }

    it("marks a task done with the model's result note", async () => {
      fake.script({ toolCalls: [{ name: 'complete_task', arguments: { result: 'Filed the report.' } }] });
      const id = await task({ summary: 'File the report', acceptance_criteria: 'Filed' });
      expect(await h.db('tasks').where({ id }).first()).to.include({ status: 'done', result: 'Filed the report.' });
      const sent = fake.seen[0]!.body;
      expect(sent.messages[1]!.content).to.equal('Task: File the report\nSummary: File the report\nAcceptance criteria: Filed');
      expect(sent.tools!.map((tool) => tool.function.name))
        .to.include.members(['complete_task', 'ask_for_input'])
        .and.not.include('reply');
    });

    it("puts a task on hold with the model's question, and sends the staff input when it resumes", async () => {
      fake.script({ toolCalls: [{ name: 'ask_for_input', arguments: { question: 'Which report?' } }] });
      const id = await task({ summary: 'File a report' });
      expect((await h.db('tasks').where({ id }).first()).status).to.equal('waiting');
      fake.script({ reply: 'Filed the Q3 report.' });
      await h.services.tasks.giveInput(staffOf(t), id, 'The Q3 one');
      await h.services.runtime.tick();
      expect(await h.db('tasks').where({ id }).first()).to.include({ status: 'done', result: 'Filed the Q3 report.' });
      expect(fake.seen.at(-1)!.body.messages[1]!.content).to.include('Your earlier note: Which report?\nStaff input: The Q3 one');
    });

    it('refuses complete_task without a result and ask_for_input without a question, so the model tries again', async () => {
      fake.script(
        { toolCalls: [{ name: 'complete_task', arguments: {} }] },
        { toolCalls: [{ name: 'ask_for_input', arguments: { question: ' ' } }] },
        { toolCalls: [{ name: 'complete_task', arguments: { result: 'Filed it.' } }] },
      );
      const id = await task({ summary: 'File it' });
      const toolResults = fake.seen.slice(1).map((r) => JSON.parse(r.body.messages.at(-1)!.content!));
      expect(toolResults).to.deep.equal([{ error: 'result is required' }, { error: 'question is required' }]);
      expect(await h.db('tasks').where({ id }).first()).to.include({ status: 'done', result: 'Filed it.' });
    });

    it('records a failure on the task and puts it on hold', async () => {
      fake.script({ status: 500, body: { error: { message: 'boom' } }, headers: { 'retry-after-ms': '5' } }, { status: 500, body: { error: { message: 'boom' } } });
      const id = await task({ summary: 'Doomed', acceptance_criteria: 'n/a' });
      expect(await h.db('tasks').where({ id }).first()).to.include({ status: 'waiting', last_error: 'the model endpoint answered HTTP 500: boom' });
    });
  });

  it('fails work clearly when no model is configured', async () => {
    const bare = await createHarness({ options: { runOnNewWork: false } });
    try {
      const other = await bare.tenant({ slug: 'unset' });
      await bare.services.scribes.setAgent(other.organizationId, 'unset', { agent: 'openai' });
      const res = await bare.api.post('/api/v1/scribes/unset/chat').set(other.headers).send({ message: 'hi' });
      await bare.services.runtime.tick();
      expect(await bare.db('sessions').where({ id: res.body.session_id }).first()).to.include({
        state: 'failed',
        error_message: 'the openai agent is not configured (set OPENAI_MODEL, or a model for the scribe)',
      });
    } finally {
      await bare.close();
    }
  });
});
