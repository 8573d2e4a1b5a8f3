import { findScribesByIds } from '../../src/scribes/queries.js';
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createHarness, staffOf, testClock, type Harness, type Tenant } from '../helpers/harness.js';
import { stored } from '../helpers/databases.js';
import { createAgentRuntime, defaultRuntimeOptions } from '../../src/runtime/queue.js';
import { claimRuns, type ClaimTerms } from '../../src/runtime/queries.js';
import { createLogger } from '../../src/logger.js';
import { createToolbox } from '../../src/agents/toolbox.js';
import type { Agent } from '../../src/agents/agent.js';

/** An agent whose answers the test releases by hand, to hold work in flight. */
function heldAgent() {
  const waiting: Array<() => void> = [];
  let started = 0;
  const hold = () => {
    started++;
    return new Promise<void>((resolve) => waiting.push(resolve));
  };
  const agent: Agent = {
    async answer() {
      await hold();
      return { reply: 'held reply' };
    },
    async work() {
      await hold();
      return { status: 'done', result: 'held result' };
    },
  };
  return {
    agent,
    get started() {
      return started;
    },
    /** Answers under way: started and not released. */
    get holding() {
      return waiting.length;
    },
    releaseAll() {
      waiting.splice(0).forEach((resolve) => resolve());
    },
  };
}

const failingAgent: Agent = {
  async answer() {
    throw new Error('the model endpoint answered HTTP 500');
  },
  async work() {
    throw new Error('the model endpoint answered HTTP 500');
  },
};

describe('the agent runtime', () => {
  let h: Harness;
  const clock = testClock();
  before(async () => {
    h = await createHarness({ options: { runOnNewWork: false, dispatchOnAccept: false, clock } });
  });
  after(() => h.close());

  const chat = async (t: Tenant, message: string, extra: object = {}) =>
    (
      await h.api
        .post(`/api/v1/scribes/${t.scribe.slug}/chat`)
        .set(t.headers)
        .send({ message, ...extra })
    ).body.session_id as string;
  const session = (id: string) => h.db('sessions').where({ id }).first();
  const transcript = (id: string) => h.db('session_messages').where({ session_id: id }).orderBy('id').select('author', 'text');
  const task = (id: string) => h.db('tasks').where({ id }).first();
  const events = (id: string) => h.db('task_events').where({ task_id: id }).orderBy('id').select('from_status', 'to_status', 'author', 'text', 'created_at');

  /** A receipt through the public API, dispatched into a task; returns the task id. */
  async function taskFromApi(t: Tenant, task: object): Promise<string> {
    const res = await h.api.post(`/api/v1/scribes/${t.scribe.slug}/requests`).set(t.headers).send({ task });
    expect(res.status).to.equal(202);
    await h.services.dispatcher.tick();
    const receipt = (await h.api.get(`/api/v1/requests/${res.body.request.id}`).set(t.headers)).body.request;
    expect(receipt.status).to.equal('fulfilled');
    return receipt.entity_id;
  }

  /** One claim of up to `slots` runs, as a process that then dies would make it. */
  const claim = async (terms: ClaimTerms, slots = 1) => (await claimRuns(h.db, { ...terms, slots }, (turns) => turns.map((turn) => [turn.id, slots]))).runs;

  /** A second runtime on the same database, as another process would be. */
  function otherRuntime(agent: Agent, options = {}) {
    return createAgentRuntime({
      db: h.db,
      clock,
      logger: createLogger('silent'),
      agentFor: () => agent,
      findScribes: (ids) => findScribesByIds(h.db, ids),
      toolboxFor: (scribe) => createToolbox(scribe, h.services),
      options: { ...defaultRuntimeOptions, ...options },
    });
  }

  describe('tasks', () => {
    it('works a receipt submitted through 4.1 to done with the builtin agent, recording every move with its time', async () => {
      const t = await h.tenant({ slug: 'worker' });
      const id = await taskFromApi(t, { summary: 'Summarise the quarter', acceptance_criteria: 'One paragraph' });
      clock.advance(1000);
      expect(await h.services.runtime.tick()).to.deep.equal({ sessions: 0, tasks: 1 });
      const row = await task(id);
      expect(row).to.include({ status: 'done', claim_token: null, lease_until: null, last_error: null });
      expect(row.result).to.equal('Done: Summarise the quarter\nSummary: Summarise the quarter\nAcceptance criteria: One paragraph\nRelated entries: none found');
      const history = await events(id);
      expect(history.map((e) => [e.from_status, e.to_status, e.author])).to.deep.equal([
        [null, 'open', 'system'],
        ['open', 'in_progress', 'scribe'],
        ['in_progress', 'done', 'scribe'],
      ]);
      expect(history[2]!.text).to.equal(row.result);
      expect(history[1]!.created_at > history[0]!.created_at).to.equal(true);
      expect(history[2]!.created_at > history[1]!.created_at).to.equal(true);
      expect(row.updated_at).to.equal(history[2]!.created_at);
    });

    it('asks for input when a task has no acceptance criteria and its summary is a question, then finishes with the input', async () => {
      const t = await h.tenant({ slug: 'asker' });
      const id = await taskFromApi(t, { summary: 'Which supplier should we drop?' });
      await h.services.runtime.tick();
      const waiting = await task(id);
      expect(waiting.status).to.equal('waiting');
      const question = 'Before I start: what would a good answer to "Which supplier should we drop?" look like? Please give acceptance criteria.';
      expect((await events(id)).at(-1)).to.include({ from_status: 'in_progress', to_status: 'waiting', author: 'scribe', text: question });

      // A tick leaves a waiting task alone.
      expect(await h.services.runtime.tick()).to.deep.equal({ sessions: 0, tasks: 0 });

      await h.services.tasks.giveInput(staffOf(t), id, 'The most expensive one, with a reason');
      expect((await task(id)).status).to.equal('open');
      await h.services.runtime.tick();
      const done = await task(id);
      expect(done.status).to.equal('done');
      expect(done.result).to.include('Input from staff: The most expensive one, with a reason');
      expect((await events(id)).map((e) => `${e.from_status}→${e.to_status}`)).to.deep.equal([
        'null→open',
        'open→in_progress',
        'in_progress→waiting',
        'waiting→open',
        'open→in_progress',
        'in_progress→done',
      ]);
    });

    it("refuses input to a task that is not waiting, and to another organization's task", async () => {
      const t = await h.tenant({ slug: 'refuser' });
      const id = await taskFromApi(t, { summary: 'Plain work', acceptance_criteria: 'ok' });
      await expectRejection(h.services.tasks.giveInput(staffOf(t), id, 'more'), 'Task is not waiting');
      const other = await h.tenant({ slug: 'refuser-2' });
      await expectRejection(h.services.tasks.giveInput(staffOf(other), id, 'more'), 'Task not found');
      await expectRejection(h.services.tasks.giveInput(staffOf(t), id, '  '), 'Input is required');
      expect((await events(id)).map((e) => e.to_status)).to.deep.equal(['open']);
    });

    it('puts a task the agent failed on to waiting, with the error recorded, and works it again after input', async () => {
      const t = await h.tenant({ slug: 'failer' });
      // Finish what earlier tests left due, so that the failing runtime claims only this test's work.
      await h.services.runtime.tick();
      const id = await taskFromApi(t, { summary: 'Will fail', acceptance_criteria: 'ok' });
      expect(await otherRuntime(failingAgent).tick(), 'a failed run counts as worked').to.deep.equal({ sessions: 0, tasks: 1 });
      const failed = await task(id);
      expect(failed).to.include({ status: 'waiting', last_error: 'the model endpoint answered HTTP 500', claim_token: null });
      expect((await events(id)).at(-1)).to.include({
        author: 'system',
        to_status: 'waiting',
        text: 'The scribe could not finish this task: the model endpoint answered HTTP 500. Give input to try again.',
      });
      await h.services.tasks.giveInput(staffOf(t), id, 'try again');
      await h.services.runtime.tick();
      expect(await task(id)).to.include({ status: 'done', last_error: null });
    });
  });

  describe('sessions', () => {
    it('answers, then takes a staff reply to the waiting session and answers again', async () => {
      const t = await h.tenant({ slug: 'talker' });
      const id = await chat(t, '');
      await h.services.runtime.tick();
      expect(await session(id)).to.include({ state: 'waiting', reply_due: stored(false) });
      await expectRejection(h.services.sessions.replyAsStaff(staffOf(t), id, ''), 'Reply is required');
      await h.services.sessions.replyAsStaff(staffOf(t), id, 'What are you working on?');
      expect(await session(id)).to.include({ state: 'queued', reply_due: stored(true) });
      await h.services.runtime.tick();
      expect(await session(id)).to.include({ state: 'waiting', reply_due: stored(false) });
      const messages = await transcript(id);
      expect(messages.map((m) => m.author)).to.deep.equal(['user', 'scribe', 'staff', 'scribe']);
      expect(messages[1]!.text).to.equal('Hello, I am talker. Ask me what I am working on, or name a company, a person or anything else to look up in your entries.');
      expect(messages[3]!.text).to.equal('I have no tasks yet. Send me one through the requests API and I will work on it.');
    });

    it('refuses a staff reply to a session that is not waiting, or of another organization', async () => {
      const t = await h.tenant({ slug: 'busy' });
      const id = await chat(t, 'hi');
      await expectRejection(h.services.sessions.replyAsStaff(staffOf(t), id, 'hello?'), 'Only a session waiting for a reply can be answered');
      const other = await h.tenant({ slug: 'busy-2' });
      await expectRejection(h.services.sessions.replyAsStaff(staffOf(other), id, 'hello?'), 'Session not found');
      expect(await transcript(id)).to.have.length(1);
    });

    it('fails a session the agent could not answer, with the message in the session and the transcript', async () => {
      const t = await h.tenant({ slug: 'broken' });
      // Finish what earlier tests left due, so that the failing runtime claims only this test's work.
      await h.services.runtime.tick();
      const id = await chat(t, 'hi');
      expect(await otherRuntime(failingAgent).tick(), 'a failed run counts as worked').to.deep.equal({ sessions: 1, tasks: 0 });
      expect(await session(id)).to.include({ state: 'failed', reply_due: stored(false), error_message: 'the model endpoint answered HTTP 500', claim_token: null });
      expect((await transcript(id)).at(-1)).to.deep.equal({ author: 'system', text: 'The scribe could not answer: the model endpoint answered HTTP 500' });
    });

    it('keeps a session ended at once completed when answering it fails, with the error recorded', async () => {
      const t = await h.tenant({ slug: 'broken-2' });
      const id = await chat(t, 'hi', { end_session_immediately: true });
      await otherRuntime(failingAgent).tick();
      expect(await session(id)).to.include({ state: 'completed', error_message: 'the model endpoint answered HTTP 500' });
    });
  });

  describe('leases and crashes', () => {
    it('takes up a session and a task claimed by a process that died, once the lease has run out', async () => {
      const t = await h.tenant({ slug: 'orphan' });
      const sessionId = await chat(t, 'hello');
      const taskId = await taskFromApi(t, { summary: 'Orphaned work', acceptance_criteria: 'ok' });
      // A process claims both, then dies without finishing (nothing renews its lease).
      const terms = { token: randomUUID(), now: clock().toISOString(), leaseUntil: new Date(clock().getTime() + defaultRuntimeOptions.leaseMs).toISOString() };
      const [claimedSession, claimedTask] = (await claim(terms, 2)).map((run) => run.row);
      expect(claimedSession).to.include({ id: sessionId, state: 'running', attempts: 1 });
      expect(claimedTask).to.include({ id: taskId, status: 'in_progress', attempts: 1 });

      expect(await h.services.runtime.tick(), 'leases still held').to.deep.equal({ sessions: 0, tasks: 0 });
      clock.advance(defaultRuntimeOptions.leaseMs);
      expect(await h.services.runtime.tick()).to.deep.equal({ sessions: 1, tasks: 1 });
      expect(await session(sessionId)).to.include({ state: 'waiting', attempts: 0, claim_token: null });
      expect(await task(taskId)).to.include({ status: 'done', attempts: 0 });
      // One in_progress move only: the second claim took over the task where it stood.
      expect((await events(taskId)).map((e) => e.to_status)).to.deep.equal(['open', 'in_progress', 'done']);
      expect((await transcript(sessionId)).map((m) => m.author)).to.deep.equal(['user', 'scribe']);
    });

    it('never records the work of a claim that was taken over', async () => {
      const t = await h.tenant({ slug: 'slowpoke' });
      const id = await chat(t, 'hello');
      const slow = heldAgent();
      // It never renews its lease: a process whose event loop stopped.
      const first = otherRuntime(slow.agent, { leaseMs: 1000, renewMs: 3_600_000 });
      const firstTick = first.tick();
      await waitFor(() => slow.started === 1);
      clock.advance(1000);
      await h.services.runtime.tick(); // takes over and answers
      slow.releaseAll();
      await firstTick;
      const messages = await transcript(id);
      expect(messages.map((m) => m.text)).to.not.include('held reply');
      expect(messages.map((m) => m.author)).to.deep.equal(['user', 'scribe']);
    });

    it('renews the lease of work that runs longer than its lease, so no other worker takes it over', async () => {
      const t = await h.tenant({ slug: 'longrunner' });
      const id = await chat(t, 'hello');
      const slow = heldAgent();
      const first = otherRuntime(slow.agent, { leaseMs: 1000, renewMs: 20 });
      const firstTick = first.tick();
      await waitFor(() => slow.started === 1);
      const claimed = await session(id);
      clock.advance(5000);
      await waitFor(async () => Date.parse((await session(id)).lease_until) > clock().getTime());
      expect(await h.services.runtime.tick(), 'nothing to take over').to.deep.equal({ sessions: 0, tasks: 0 });
      expect(await session(id)).to.include({ claim_token: claimed.claim_token, attempts: 1 });
      slow.releaseAll();
      await firstTick;
      expect((await transcript(id)).map((m) => m.text)).to.deep.equal(['hello', 'held reply']);
    });

    it('fails work that keeps crashing its worker after the last attempt', async () => {
      const t = await h.tenant({ slug: 'crasher' });
      const id = await chat(t, 'hello');
      for (let i = 0; i < defaultRuntimeOptions.maxAttempts; i++) {
        expect((await claim({ token: randomUUID(), now: clock().toISOString(), leaseUntil: clock().toISOString() }))[0]?.row).to.include({ id });
        clock.advance(1);
      }
      await h.services.runtime.tick();
      expect(await session(id)).to.include({ state: 'failed', error_message: 'gave up after 3 attempts' });
    });

    it('gives claimed work back when it stops, so the next start picks it up at once', async () => {
      const t = await h.tenant({ slug: 'stopper' });
      const id = await chat(t, 'hello');
      // Answers only when aborted, as a model call does; work other tests left due may be claimed too.
      const untilAborted = (signal: AbortSignal) =>
        new Promise<never>((_resolve, reject) => {
          if (signal.aborted) reject(new Error('aborted'));
          signal.addEventListener('abort', () => reject(new Error('aborted')));
        });
      const slowAgent: Agent = { answer: ({ signal }) => untilAborted(signal), work: ({ signal }) => untilAborted(signal) };
      const runtime = otherRuntime(slowAgent);
      runtime.fill();
      await waitFor(async () => (await session(id)).claim_token !== null);
      await runtime.stop();
      expect(await session(id)).to.include({ state: 'running', reply_due: stored(true), claim_token: null, lease_until: null });
      await h.services.runtime.tick();

      expect(await session(id)).to.include({ state: 'waiting', reply_due: stored(false) });
    });
  });

  describe('concurrency', () => {
    it("works at most a scribe's max_concurrency of its pieces and concurrency in all at once", async () => {
      const held = heldAgent();
      const runtime = otherRuntime(held.agent, { concurrency: 3 });
      const a = await h.tenant({ slug: 'crowd-a' });
      const b = await h.tenant({ slug: 'crowd-b' });
      for (const t of [a, b]) await h.services.scribes.setAgent(t.organizationId, t.scribe.slug, { maxConcurrency: 2 });
      // Finish what earlier tests left due, so only this test's sessions are claimed.
      await h.services.runtime.tick();
      for (let i = 0; i < 4; i++) await chat(a, `a${i}`);
      for (let i = 0; i < 4; i++) await chat(b, `b${i}`);
      const ticking = runtime.tick();
      await waitFor(() => held.started === 3);
      const running = await h.db('sessions').whereIn('scribe_id', [a.scribe.id, b.scribe.id]).whereNotNull('claim_token').select('scribe_id');
      expect(running).to.have.length(3);
      const perScribe = [a, b].map((t) => running.filter((r) => r.scribe_id === t.scribe.id).length);
      expect(Math.max(...perScribe)).to.equal(2);
      expect(runtime.running).to.equal(3);
      // Released work frees slots: everything is answered in the end, the agent never answering more than 3 at once.
      while (held.started < 8) {
        held.releaseAll();
        await new Promise((resolve) => setTimeout(resolve, 5));
        expect(held.holding).to.be.at.most(3);
      }
      held.releaseAll();
      expect(await ticking).to.deep.equal({ sessions: 8, tasks: 0 });
      expect(await h.db('sessions').whereIn('scribe_id', [a.scribe.id, b.scribe.id]).where({ state: 'waiting' }).count({ n: '*' }).first()).to.deep.equal({ n: 8 });
    });
  });
});

async function expectRejection(promise: Promise<unknown>, message: string) {
  try {
    await promise;
  } catch (err) {
    expect((err as Error).message).to.equal(message);
    return;
  }
  expect.fail(`expected a rejection with "${message}"`);
}

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
