import { expect } from 'chai';
import { createHarness, eventually, staffOf, type Harness, type Tenant } from '../helpers/harness.js';
import { startFakeOpenAi } from '../helpers/fake-openai.js';
import { runtimeWith } from '../helpers/agent-runtime.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { messages } from '../../src/agents/mcp-servers.js';
import { createMcpConnector, defaultMcpLimits } from '../../src/agents/mcp.js';
import { createOpenAiAgent } from '../../src/agents/openai.js';
import { createLogger } from '../../src/logger.js';
import { anyAddress } from '../../src/net/address-policy.js';
import { createGuardedLeanFetch } from '../../src/net/guarded-agent.js';

const SECRET_HEADER = 'Bearer mcp-secret-token-91b2';

describe('tools over MCP', function () {
  this.timeout(20_000);
  let h: Harness;
  let fake: Awaited<ReturnType<typeof startFakeOpenAi>>;
  let mcp: Awaited<ReturnType<typeof startMcpServer>>;
  let t: Tenant;

  before(async () => {
    fake = await startFakeOpenAi();
    mcp = await startMcpServer();
    h = await createHarness({
      env: { OPENAI_BASE_URL: fake.baseUrl, OPENAI_MODEL: 'test-model', OPENAI_MAX_RETRIES: '0' },
      // Loopback is refused in production; here 127.0.0.1 (the MCP server) is let through.
      options: { runOnNewWork: false, dispatchOnAccept: false, addressPolicy: (a) => a === '127.0.0.1', mcp: { connectTimeoutMs: 2_000, callTimeoutMs: 2_000 } },
    });
    t = await h.tenant({ slug: 'oracle' });
    await h.services.scribes.setAgent(t.organizationId, 'oracle', { agent: 'openai' });
  });
  after(async () => {
    await h.close();
    await fake.close();
    await mcp.close();
  });
  afterEach(async () => {
    fake.seen.length = 0;
    fake.clear();
    mcp.calls.length = 0;
    for (const server of await h.services.mcpServers.list(t.scribe.id)) await h.services.mcpServers.remove(staffOf(t), server.id);
  });

  async function chat(message: string): Promise<string> {
    const res = await h.api.post('/api/v1/scribes/oracle/chat').set(t.headers).send({ message });
    await h.services.runtime.tick();
    return res.body.session_id;
  }

  it("offers the server's tools beside the scribe's own, sends its headers, and gives the results back to the model", async () => {
    await h.services.mcpServers.add(staffOf(t), 'oracle', { url: mcp.url, headers: [`Authorization: ${SECRET_HEADER}`] });
    fake.script(
      {
        toolCalls: [
          { name: 'mcp1_add', arguments: { a: 2, b: 40 } },
          { name: 'mcp1_weather', arguments: { city: 'Zurich' } },
        ],
      },
      { reply: '42, and sunny in Zurich.' },
    );
    const id = await chat('What is 2 + 40, and the weather in Zurich?');
    const offered = fake.seen[0]!.body.tools!.map((tool) => tool.function.name);
    expect(offered).to.include.members(['search_entries', 'reply', 'mcp1_add', 'mcp1_weather']);
    expect(mcp.calls).to.deep.equal([
      { tool: 'add', args: { a: 2, b: 40 } },
      { tool: 'weather', args: { city: 'Zurich' } },
    ]);
    expect(mcp.headers.every((headers) => headers.authorization === SECRET_HEADER)).to.equal(true);
    const toolMessages = fake.seen[1]!.body.messages.filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content!));
    expect(toolMessages).to.deep.equal([{ result: '42' }, { result: 'Sunny in Zurich, 21 °C' }]);
    expect((await h.db('session_messages').where({ session_id: id }).orderBy('id')).at(-1).text).to.equal('42, and sunny in Zurich.');

    const trace = await h.services.traces.of({ sessionId: id });
    expect(trace.map((c) => `${c.kind} ${c.name}`)).to.deep.equal(['model test-model', 'tool mcp1_add', 'tool mcp1_weather', 'model test-model']);
    expect(JSON.stringify(trace), 'no header value in the trace').not.to.include('mcp-secret-token');
  });

  it("gives the model each tool under a name of its own, and a tool's failure as the tool failed", async () => {
    await h.services.mcpServers.add(staffOf(t), 'oracle', { url: mcp.url });
    fake.script(
      {
        toolCalls: [
          { name: 'mcp1_a_b', arguments: {} },
          { name: 'mcp1_a_b_2', arguments: {} },
          { name: 'mcp1_fail', arguments: {} },
          { name: 'mcp1_add', arguments: { a: 'two' } },
        ],
      },
      { reply: 'Done.' },
    );
    await chat('Use every tool');
    const offered = fake.seen[0]!.body.tools!.map((tool) => tool.function.name).filter((name) => name.startsWith('mcp1_'));
    expect(offered).to.deep.equal(['mcp1_add', 'mcp1_weather', 'mcp1_fail', 'mcp1_hang', 'mcp1_a_b', 'mcp1_a_b_2']);
    expect(mcp.calls.map((c) => c.tool)).to.deep.equal(['a.b', 'a_b', 'fail']);
    const toolMessages = fake.seen[1]!.body.messages.filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content!));
    expect(toolMessages.slice(0, 3)).to.deep.equal([{ result: 'ran a.b' }, { result: 'ran a_b' }, { error: 'the tool failed: kaboom inside the tool' }]);
    expect(toolMessages[3].error).to.match(/^the tool failed: MCP error -32602: Input validation error/);
  });

  it('ends a tool call under way when its task is cancelled: the MCP server hears the cancel at once, and nothing of the tool call is recorded', async () => {
    // A call timeout far longer than the test waits: only the cancel can end the call in time.
    const patient = await createHarness({
      env: { OPENAI_BASE_URL: fake.baseUrl, OPENAI_MODEL: 'test-model', OPENAI_MAX_RETRIES: '0' },
      options: { runOnNewWork: false, dispatchOnAccept: false, addressPolicy: (a) => a === '127.0.0.1', mcp: { connectTimeoutMs: 2_000, callTimeoutMs: 60_000 } },
    });
    try {
      const pt = await patient.tenant({ slug: 'patient' });
      await patient.services.scribes.setAgent(pt.organizationId, 'patient', { agent: 'openai' });
      await patient.services.mcpServers.add(staffOf(pt), 'patient', { url: mcp.url });
      fake.script({ toolCalls: [{ name: 'mcp1_hang', arguments: {} }] }, { reply: 'never asked for' });
      const res = await patient.api
        .post('/api/v1/scribes/patient/requests')
        .set(pt.headers)
        .send({ task: { summary: 'Wait on the tool' } });
      await patient.services.dispatcher.tick();
      const taskId = (await patient.db('requests').where({ id: res.body.request.id }).first()).entity_id;
      patient.services.runtime.fill();
      await eventually(async () => (mcp.calls.some((c) => c.tool === 'hang') ? true : undefined), 5_000);

      const at = Date.now();
      await patient.services.tasks.cancel(staffOf(pt), taskId);
      await eventually(async () => (mcp.cancelled.length === 1 ? true : undefined), 2_000);
      expect(mcp.cancelled[0]! - at).to.be.below(2_000);
      await eventually(async () => (patient.services.runtime.running === 0 ? true : undefined), 2_000);
      expect(fake.seen, 'the model is not asked again').to.have.length(1);
      expect(await patient.db('tasks').where({ id: taskId }).first()).to.include({ status: 'cancelled', claim_token: null, result: null });
      // The model's call that asked for the tool came before the cancel; the tool's, cut short by it, left nothing.
      expect(await patient.db('agent_calls').where({ task_id: taskId }).orderBy('id').select('kind', 'name', 'error')).to.deep.equal([
        { kind: 'model', name: 'test-model', error: null },
      ]);
    } finally {
      await patient.close();
      mcp.cancelled.length = 0;
    }
  });

  it("ends a tool call still under way at the work's deadline, and fails the work with the deadline as its reason", async () => {
    const connectMcp = createMcpConnector((a) => a === '127.0.0.1', { ...defaultMcpLimits, callTimeoutMs: 60_000 });
    const scribeEndpointFetch = createGuardedLeanFetch(anyAddress);
    const agent = createOpenAiAgent(h.config.openai, createLogger('silent'), {
      deadlineMs: 1_000,
      connectMcp,
      endpointFetch: fetch,
      scribeEndpointFetch,
      secrets: h.services.secrets,
    });
    const runtime = runtimeWith(h, agent);
    try {
      await h.services.mcpServers.add(staffOf(t), 'oracle', { url: mcp.url });
      fake.script({ toolCalls: [{ name: 'mcp1_hang', arguments: {} }] }, { reply: 'never asked for' });
      const id = (await h.api.post('/api/v1/scribes/oracle/chat').set(t.headers).send({ message: 'Wait for it' })).body.session_id;
      const started = Date.now();
      expect(await runtime.tick()).to.deep.equal({ sessions: 1, tasks: 0 });
      expect(Date.now() - started, 'ended at the deadline, not at the tool call timeout').to.be.below(10_000);
      await eventually(async () => (mcp.cancelled.length === 1 ? true : undefined), 2_000);
      expect(fake.seen, 'the model is not asked again').to.have.length(1);
      expect(await h.db('sessions').where({ id }).first()).to.include({ state: 'failed', error_message: 'the work took longer than 1s' });
    } finally {
      mcp.cancelled.length = 0;
      await scribeEndpointFetch.close();
      await connectMcp.close();
    }
  });

  it('works on without the tools of a server that is down, and the trace says why', async () => {
    const down = await startMcpServer();
    const url = down.url;
    await down.close();
    await h.services.mcpServers.add(staffOf(t), 'oracle', { url });
    fake.script({ reply: 'I answer without tools.' });
    const id = await chat('Hello');
    expect((await h.db('sessions').where({ id }).first()).state).to.equal('waiting');
    // Exactly the scribe's own: none of the last run's MCP tools stayed among those every run is offered.
    expect(fake.seen[0]!.body.tools!.map((tool) => tool.function.name)).to.deep.equal([
      'list_entry_types',
      'search_entries',
      'create_entry',
      'update_entry',
      'list_tasks',
      'reply',
    ]);
    const [note] = await h.services.traces.of({ sessionId: id });
    expect(note).to.deep.include({ kind: 'tool', name: 'mcp_list_tools' });
    expect(note!.error).to.equal(`MCP server ${url} is unavailable (connection refused); its tools were not offered`);
  });

  it('connects only where the address policy allows (checked when connecting, after DNS)', async () => {
    // localhost resolves to loopback, which this harness's policy refuses unless it is 127.0.0.1 exactly;
    // ::1 is refused, and a name that resolves to it fails at connect time.
    const refused = await h.services.mcpServers.add(staffOf(t), 'oracle', { url: `http://[::1]:${mcp.port}/mcp` }).then(
      () => 'added',
      (err: Error) => err.message,
    );
    expect(refused).to.equal(messages.privateAddress);
    const strict = await createHarness({ env: { OPENAI_BASE_URL: fake.baseUrl, OPENAI_MODEL: 'test-model' }, options: { runOnNewWork: false, dispatchOnAccept: false } });
    try {
      const s = await strict.tenant({ slug: 'oracle' });
      await strict.services.scribes.setAgent(s.organizationId, 'oracle', { agent: 'openai' });
      await strict.services.mcpServers.add(staffOf(s), 'oracle', { url: `http://localhost:${mcp.port}/mcp` });
      fake.script({ reply: 'No tools for me.' });
      const res = await strict.api.post('/api/v1/scribes/oracle/chat').set(s.headers).send({ message: 'Hi' });
      await strict.services.runtime.tick();
      const [note] = await strict.services.traces.of({ sessionId: res.body.session_id });
      expect(note!.error).to.equal(`MCP server http://localhost:${mcp.port}/mcp is unavailable (address not allowed); its tools were not offered`);
      expect(mcp.calls).to.have.length(0);
    } finally {
      await strict.close();
    }
  });

  it('refuses a header that is not "Name: value", and audits adding and removing', async () => {
    // The refusal names the line, never its text: a header line holds a secret.
    const bad = await h.services.mcpServers.add(staffOf(t), 'oracle', { url: mcp.url, headers: ['X-Team: blue', '', 'Authorization Bearer sk-live-secret'] }).then(
      () => 'added',
      (err: Error) => err.message,
    );
    expect(bad).to.equal('Header line 2 must be "Name: value"');
    const server = await h.services.mcpServers.add(staffOf(t), 'oracle', { url: mcp.url });
    await h.services.mcpServers.remove(staffOf(t), server.id);
    const actions = await h
      .db('audit_events')
      .where({ subject_type: 'scribe', subject_id: t.scribe.id })
      .whereIn('action', ['scribe.add_mcp', 'scribe.remove_mcp'])
      .orderBy('id')
      .pluck('action');
    expect(actions.slice(-2)).to.deep.equal(['scribe.add_mcp', 'scribe.remove_mcp']);
  });
});
