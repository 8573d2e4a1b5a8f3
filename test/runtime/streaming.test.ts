import { findScribesByIds } from '../../src/scribes/queries.js';
import { expect } from 'chai';
import { createHarness, eventually, staffOf, type Harness, type Tenant } from '../helpers/harness.js';
import { startFakeOpenAi } from '../helpers/fake-openai.js';
import { runAdmin } from '../helpers/cli.js';
import { signIn } from '../helpers/console.js';
import { createAgentRuntime, defaultRuntimeOptions } from '../../src/runtime/queue.js';
import { createOpenAiAgent } from '../../src/agents/openai.js';
import { createToolbox } from '../../src/agents/toolbox.js';
import { createGuardedLeanFetch } from '../../src/net/guarded-agent.js';
import { anyAddress } from '../../src/net/address-policy.js';
import { createLogger } from '../../src/logger.js';

type Fake = Awaited<ReturnType<typeof startFakeOpenAi>>;

/** The openai agent streams: an answer under way is readable while the model writes it, and recorded once, whole. */
describe('answers written as the model streams them', function () {
  this.timeout(30_000);
  let fake: Fake;
  let h: Harness;
  let t: Tenant;
  const saves: Array<{ id: string; text: string }> = [];

  const REPLY = 'High water on Thursday is at 06:12 and again at 18:40; low water, 0.4 m, comes at noon.';
  /** The reply's first `n` of `of` pieces, as the fake streams them and a draft stores them (blanks at the end wait for what follows). */
  const firstPieces = (text: string, n: number, of: number) => text.slice(0, Math.floor((n * text.length) / of)).trimEnd();

  before(async () => {
    fake = await startFakeOpenAi();
    h = await createHarness({
      env: { OPENAI_BASE_URL: fake.baseUrl, OPENAI_MODEL: 'm', OPENAI_MAX_RETRIES: '0', OPENAI_TIMEOUT_MS: '20000', MODELS_ALLOW_PRIVATE: 'true' },
      options: { runOnNewWork: false, dispatchOnAccept: false, runtime: { cancelCheckMs: 200 }, onDraftSaved: (work, text) => saves.push({ id: work.id, text }) },
    });
    t = await h.tenant({ slug: 'tides' });
    await h.services.scribes.setAgent(t.organizationId, 'tides', { agent: 'openai' });
  });
  after(async () => {
    await h.close();
    await fake.close();
  });
  afterEach(() => {
    fake.release();
    fake.clear();
    fake.seen.length = 0;
    fake.hits.abandoned = 0;
  });

  async function chat(message: string, slug = 'tides'): Promise<string> {
    const res = await h.api.post(`/api/v1/scribes/${slug}/chat`).set(t.headers).send({ message });
    expect(res.status).to.equal(202);
    return res.body.session_id;
  }
  async function submitTask(summary: string): Promise<string> {
    const res = await h.api.post('/api/v1/scribes/tides/requests').set(t.headers).send({ task: { summary } });
    await h.services.dispatcher.tick();
    return (await h.db('requests').where({ id: res.body.request.id }).first()).entity_id;
  }
  const messages = (id: string) => h.db('session_messages').where({ session_id: id }).orderBy('id').select('id', 'author', 'text', 'partial');
  const events = (id: string) => h.db('task_events').where({ task_id: id }).orderBy('id').select('id', 'from_status', 'to_status', 'author', 'text', 'partial');
  const cli = async (...args: string[]) => JSON.parse((await runAdmin(args, { DATA_DIR: h.dir, DATABASE_URL: h.config.databaseUrl })).stdout);
  /** Waits until the row that is being written holds `text`. */
  const writing = <T extends { partial: unknown; text: string | null }>(rows: () => Promise<T[]>, text: string) =>
    eventually(async () => (await rows()).find((row) => Boolean(row.partial) && row.text === text), 5_000);

  it('shows a session answer while the model writes it, then records the whole reply as that same message, once', async () => {
    fake.script({ reply: REPLY, chunks: 10, chunkDelayMs: 20, holdAt: 5 });
    const id = await chat('When is high water on Thursday?');
    const ticking = h.services.runtime.tick();

    const draft = await writing(() => messages(id), firstPieces(REPLY, 5, 10));
    expect(draft).to.include({ author: 'scribe' });
    const shown = await cli('session', 'show', '--id', id);
    expect(shown.state).to.equal('running');
    expect(shown.messages.map((m: { author: string; text: string; partial: boolean }) => [m.author, m.text, m.partial])).to.deep.equal([
      ['user', 'When is high water on Thursday?', false],
      ['scribe', firstPieces(REPLY, 5, 10), true],
    ]);

    fake.release();
    await ticking;
    const rows = await messages(id);
    expect(rows.map((m) => [m.id, m.author, m.text, Boolean(m.partial)])).to.deep.equal([
      [rows[0]!.id, 'user', 'When is high water on Thursday?', false],
      [draft.id, 'scribe', REPLY, false],
    ]);
    expect(await h.db('sessions').where({ id }).first()).to.include({ state: 'waiting' });
    const written = saves.filter((s) => s.id === id).map((s) => s.text);
    expect(written.length).to.be.greaterThan(0);
    for (const text of written) expect(REPLY.startsWith(text), `"${text}" is a prefix of the reply`).to.equal(true);
    const [call] = await h.db('agent_calls').where({ session_id: id }).select('kind', 'input_tokens', 'output_tokens');
    expect(call, 'usage comes with the stream').to.deep.equal({ kind: 'model', input_tokens: 120, output_tokens: 30 });
    expect(fake.seen[0]!.body).to.deep.include({ stream: true, stream_options: { include_usage: true } });
  });

  it('shows a task result while the model writes it, then records it as that same event when the task is done', async () => {
    const id = await submitTask('Tabulate the week of tides');
    fake.script({ reply: REPLY, chunks: 10, chunkDelayMs: 20, holdAt: 3 });
    const ticking = h.services.runtime.tick();

    const draft = await writing(() => events(id), firstPieces(REPLY, 3, 10));
    expect(draft).to.include({ from_status: 'in_progress', to_status: 'done', author: 'scribe' });
    const shown = await cli('task', 'show', '--id', id);
    expect(shown).to.include({ status: 'in_progress', result: null });
    expect(shown.events.at(-1)).to.include({ from: 'in_progress', to: 'done', author: 'scribe', text: firstPieces(REPLY, 3, 10), partial: true });

    fake.release();
    await ticking;
    expect(await h.db('tasks').where({ id }).first()).to.include({ status: 'done', result: REPLY });
    const rows = await events(id);
    expect(rows.filter((e) => e.author === 'scribe' && e.to_status === 'done')).to.deep.equal([{ ...draft, text: REPLY, partial: rows.at(-1)!.partial }]);
    expect(rows.map((e) => Boolean(e.partial))).to.not.include(true);
    expect((await cli('task', 'show', '--id', id)).events.at(-1)).to.include({ text: REPLY, partial: false });
  });

  it('stores an answer written in 200 small pieces a few times a second, not once a piece', async () => {
    const reply = Array.from({ length: 200 }, (_, i) => `w${i}`).join(' ');
    fake.script({ reply, chunks: 200, chunkDelayMs: 5 });
    const id = await chat('Say many words');
    const started = performance.now();
    await h.services.runtime.tick();
    const tookMs = performance.now() - started;

    const written = saves.filter((s) => s.id === id);
    expect(written.length).to.be.at.least(1);
    // At most one write each 250 ms of the stream, and the first at once: about 5 for a second.
    expect(written.length).to.be.at.most(Math.ceil(tookMs / 250) + 1);
    expect(written.length).to.be.below(20);
    expect((await messages(id)).map((m) => [m.author, m.text, Boolean(m.partial)])).to.deep.equal(
      [
        ['user', 'Say many words'],
        ['scribe', reply],
      ].map(([author, text]) => [author, text, false]),
    );
  });

  it('runs tool rounds streamed: arguments put together from their pieces, text written before a call not kept', async () => {
    const contacts = await h.services.entryTypes.create(t.organizationId, { name: 'Harbours', fields: [{ name: 'Name', type: 'text', primary: true }] });
    fake.script(
      { preamble: 'Let me note that harbour first.', chunks: 3, toolCalls: [{ name: 'create_entry', arguments: { entry_type: 'harbours', fields: { Name: 'Port Isaac' } } }] },
      { reply: 'I noted Port Isaac.', chunks: 4 },
    );
    const id = await chat('Note the harbour Port Isaac');
    await h.services.runtime.tick();

    expect((await messages(id)).map((m) => [m.author, m.text, Boolean(m.partial)])).to.deep.equal([
      ['user', 'Note the harbour Port Isaac', false],
      ['scribe', 'I noted Port Isaac.', false],
    ]);
    const entries = await h.db('entries').where({ entry_type_id: contacts.id });
    expect(entries).to.have.length(1);
    const toolMessage = fake.seen[1]!.body.messages.at(-1)!;
    expect(toolMessage.role).to.equal('tool');
    expect(JSON.parse(toolMessage.content!)).to.include({ id: entries[0].id });
    expect(saves.filter((s) => s.id === id).map((s) => s.text)).to.not.include('Let me note that harbour first.');
  });

  it('cancels an answer under way: the model call is aborted, what was written goes, and nothing more is written', async () => {
    fake.script({ reply: REPLY, chunks: 10, chunkDelayMs: 20, holdAt: 4 });
    const id = await chat('Keep talking');
    h.services.runtime.fill();
    await writing(() => messages(id), firstPieces(REPLY, 4, 10));

    await h.services.sessions.cancel(staffOf(t), id);
    const writesAtCancel = saves.filter((s) => s.id === id).length;
    await eventually(async () => (fake.hits.abandoned === 1 ? true : undefined), 2_000);
    await eventually(async () => (h.services.runtime.running === 0 ? true : undefined), 2_000);

    expect((await messages(id)).map((m) => [m.author, m.text, Boolean(m.partial)])).to.deep.equal([
      ['user', 'Keep talking', false],
      ['system', 'Cancelled by staff@example.com', false],
    ]);
    expect(saves.filter((s) => s.id === id)).to.have.length(writesAtCancel);
    expect(await h.db('sessions').where({ id }).first()).to.include({ state: 'cancelled', claim_token: null });
  });

  it('cancels a task whose result is under way from another process (the admin CLI): the draft event goes with it', async () => {
    const id = await submitTask('Forecast the spring tides');
    fake.script({ reply: REPLY, chunks: 10, chunkDelayMs: 20, holdAt: 2 });
    h.services.runtime.fill();
    await writing(() => events(id), firstPieces(REPLY, 2, 10));

    expect(await cli('task', 'cancel', '--id', id)).to.deep.equal({ id, status: 'cancelled' });
    await eventually(async () => (fake.hits.abandoned === 1 ? true : undefined), 2_000);
    await eventually(async () => (h.services.runtime.running === 0 ? true : undefined), 2_000);

    const rows = await events(id);
    expect(rows.map((e) => [e.from_status, e.to_status, e.author, Boolean(e.partial)])).to.deep.equal([
      [null, 'open', 'system', false],
      ['open', 'in_progress', 'scribe', false],
      ['in_progress', 'cancelled', 'system', false],
    ]);
    expect(await h.db('tasks').where({ id }).first()).to.include({ status: 'cancelled', result: null, claim_token: null });
  });

  it('hands an answer under way back at shutdown without what was written; the next run writes it afresh, once', async () => {
    const id = await submitTask('Tide table for the weekend');
    // A second process's runtime, stopped while the model writes.
    const other = otherProcess();
    fake.script({ reply: 'A first try', chunks: 4, holdAt: 2 });
    other.fill();
    await writing(() => events(id), firstPieces('A first try', 2, 4));

    await other.stop();
    expect(await h.db('tasks').where({ id }).first()).to.include({ status: 'in_progress', claim_token: null, result: null });
    expect(
      (await events(id)).map((e) => Boolean(e.partial)),
      'the draft went with the hand-back',
    ).to.not.include(true);

    fake.script({ reply: REPLY, chunks: 5 });
    await h.services.runtime.tick();
    const done = (await events(id)).filter((e) => e.to_status === 'done');
    expect(done.map((e) => [e.author, e.text, Boolean(e.partial)])).to.deep.equal([['scribe', REPLY, false]]);
  });

  it('counts no hand-back at shutdown as an attempt: a task and a session handed back four times in a row are still answered, once', async () => {
    const task = await submitTask('Ferry timetable');
    const session = await chat('When does the ferry leave?');
    for (let stop = 1; stop <= 4; stop++) {
      const other = otherProcess();
      fake.script({ reply: 'A first try', chunks: 4, holdAt: 2 }, { reply: 'A first try', chunks: 4, holdAt: 2 });
      other.fill();
      await writing(() => events(task), firstPieces('A first try', 2, 4));
      await writing(() => messages(session), firstPieces('A first try', 2, 4));
      await other.stop();
      expect(await h.db('tasks').where({ id: task }).first(), `task, stop ${stop}`).to.include({ status: 'in_progress', claim_token: null, attempts: 0 });
      expect(await h.db('sessions').where({ id: session }).first(), `session, stop ${stop}`).to.include({ claim_token: null, attempts: 0 });
    }
    fake.script({ reply: REPLY, chunks: 5 }, { reply: REPLY, chunks: 5 });
    await h.services.runtime.tick();
    await eventually(async () => ((await h.db('tasks').where({ id: task }).first()).status === 'done' ? true : undefined));
    expect(await h.db('tasks').where({ id: task }).first()).to.include({ result: REPLY, last_error: null });
    const replies = (await messages(session)).filter((m) => m.author === 'scribe').map((m) => m.text);
    expect(replies).to.deep.equal([REPLY]);
  });

  it('completes the result a run left under way when its process died (its lease lapsed): that same event, once', async () => {
    const id = await submitTask('Tides for the harbour master');
    const other = otherProcess();
    fake.script({ reply: 'A first try', chunks: 4, holdAt: 2 }, { reply: REPLY, chunks: 5 });
    other.fill();
    const draft = await writing(() => events(id), firstPieces('A first try', 2, 4));
    // As if the other process died here: its claim's lease lapses with the draft stored.
    await h.db('tasks').where({ id }).update({ lease_until: '2000-01-01T00:00:00.000Z' });

    await h.services.runtime.tick();
    const done = async () => (await events(id)).filter((e) => e.to_status === 'done').map((e) => [e.id, e.author, e.text, Boolean(e.partial)]);
    expect(await done(), 'the draft became the result').to.deep.equal([[draft.id, 'scribe', REPLY, false]]);
    // The first run, let go on, finds its claim taken: it records nothing.
    fake.release();
    await other.stop();
    expect(await done()).to.deep.equal([[draft.id, 'scribe', REPLY, false]]);
    expect(await h.db('tasks').where({ id }).first()).to.include({ status: 'done', result: REPLY });
  });

  it('completes the reply a run left under way when its process died: that same message, once', async () => {
    const other = otherProcess();
    fake.script({ reply: 'A first try', chunks: 4, holdAt: 2 }, { reply: REPLY, chunks: 5 });
    const id = await chat('When is high water?');
    other.fill();
    const draft = await writing(() => messages(id), firstPieces('A first try', 2, 4));
    await h.db('sessions').where({ id }).update({ lease_until: '2000-01-01T00:00:00.000Z' });

    await h.services.runtime.tick();
    const replies = async () => (await messages(id)).filter((m) => m.author === 'scribe').map((m) => [m.id, m.text, Boolean(m.partial)]);
    expect(await replies(), 'the draft became the reply').to.deep.equal([[draft.id, REPLY, false]]);
    fake.release();
    await other.stop();
    expect(await replies()).to.deep.equal([[draft.id, REPLY, false]]);
  });

  /** A second process's runtime on the same database, with its own openai agent. */
  function otherProcess() {
    return createAgentRuntime({
      db: h.db,
      clock: h.services.clock,
      logger: createLogger('silent'),
      agentFor: () =>
        createOpenAiAgent(h.config.openai, createLogger('silent'), {
          endpointFetch: fetch,
          scribeEndpointFetch: createGuardedLeanFetch(anyAddress),
          secrets: h.services.secrets,
        }),
      findScribes: (ids) => findScribesByIds(h.db, ids),
      toolboxFor: (scribe) => createToolbox(scribe, h.services),
      options: defaultRuntimeOptions,
    });
  }

  it('marks a message being written on the session page, which then refreshes at the pace it is written', async () => {
    const admin = await signIn(h, t, 'admin');
    fake.script({ reply: REPLY, chunks: 10, holdAt: 6 });
    const id = await chat('Page me the tides');
    const ticking = h.services.runtime.tick();
    await writing(() => messages(id), firstPieces(REPLY, 6, 10));

    const page = await admin.get(`/sessions/${id}`);
    expect(page.status).to.equal(200);
    expect(page.text).to.include('data-live="until-settled" data-live-every="250"');
    expect(page.text).to.match(/<li class="msg msg-scribe msg-partial">\s*<span class="msg-author">scribe<\/span> <span class="writing">writing…<\/span>/);
    expect(page.text).to.include(`<div class="msg-text md"><p>${firstPieces(REPLY, 6, 10)}</p></div>`);

    fake.release();
    await ticking;
    const after = await admin.get(`/sessions/${id}`);
    expect(after.text).to.not.include('writing…').and.not.include('data-live-every');
    expect(after.text).to.include(`<div class="msg-text md"><p>${REPLY}</p></div>`);
  });

  describe('endpoints that do not stream', () => {
    let plain: Fake;
    let refusing: Fake;

    before(async () => {
      plain = await startFakeOpenAi();
      refusing = await startFakeOpenAi();
      await h.services.scribes.create({ organizationId: t.organizationId, slug: 'plain', name: 'Plain', agent: 'openai' });
      await h.services.scribes.setAgent(t.organizationId, 'plain', { baseUrl: plain.baseUrl });
      await h.services.scribes.create({ organizationId: t.organizationId, slug: 'refusing', name: 'Refusing', agent: 'openai' });
      await h.services.scribes.setAgent(t.organizationId, 'refusing', { baseUrl: refusing.baseUrl });
    });
    after(async () => {
      await plain.close();
      await refusing.close();
    });

    it('takes a plain answer to a streamed request, and asks that endpoint plainly from then on', async () => {
      plain.script({ reply: 'Plainly: 06:12.', plain: true }, { reply: 'And 18:40.' });
      const id = await chat('When?', 'plain');
      await h.services.runtime.tick();
      await h.services.sessions.replyAsStaff(staffOf(t), id, 'And later?');
      await h.services.runtime.tick();

      expect((await messages(id)).map((m) => [m.author, m.text, Boolean(m.partial)])).to.deep.equal([
        ['user', 'When?', false],
        ['scribe', 'Plainly: 06:12.', false],
        ['staff', 'And later?', false],
        ['scribe', 'And 18:40.', false],
      ]);
      expect(plain.seen.map((r) => r.body.stream ?? false)).to.deep.equal([true, false]);
      expect(await h.db('agent_calls').where({ session_id: id }).pluck('input_tokens')).to.deep.equal([120, 120]);
    });

    it('asks plainly an endpoint that refuses the stream parameter, and only plainly from then on', async () => {
      refusing.script({ reply: 'Refused to stream, answered anyway.', refusesStream: true }, { reply: 'Still plain.', refusesStream: true });
      const first = await chat('Stream?', 'refusing');
      await h.services.runtime.tick();
      const second = await chat('Again?', 'refusing');
      await h.services.runtime.tick();

      expect((await messages(first)).at(-1)).to.include({ author: 'scribe', text: 'Refused to stream, answered anyway.' });
      expect((await messages(second)).at(-1)).to.include({ author: 'scribe', text: 'Still plain.' });
      expect(refusing.seen.map((r) => r.body.stream ?? false)).to.deep.equal([true, false, false]);
    });

    it('fails in words, with the call failed in the trace, a plain answer that holds no choices', async () => {
      // Asked plainly from the test before; an answer of the right status and type, but no completion (an error page's JSON).
      refusing.script({ status: 200, body: { id: 'x' } });
      const id = await chat('Anything?', 'refusing');
      await h.services.runtime.tick();
      const error = "the model endpoint's answer could not be read: it holds no choices";
      expect(await h.db('sessions').where({ id }).first()).to.include({ state: 'failed', error_message: error });
      expect((await messages(id)).at(-1)).to.include({ author: 'system', text: `The scribe could not answer: ${error}` });
      expect(await h.db('agent_calls').where({ session_id: id }).select('kind', 'error')).to.deep.equal([{ kind: 'model', error }]);
    });
  });
});
