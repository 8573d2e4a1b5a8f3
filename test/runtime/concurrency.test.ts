import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createHarness, eventually, staffOf, type Harness, type Tenant } from '../helpers/harness.js';
import { startFakeOpenAi } from '../helpers/fake-openai.js';
import { itOnlyOn } from '../helpers/databases.js';
import { openDatabase } from '../../src/db/knex.js';
import { createLogger } from '../../src/logger.js';
import { createServices } from '../../src/services.js';
import { claimRuns, countRunsInFlight } from '../../src/runtime/queries.js';
import type { Agent } from '../../src/agents/agent.js';

type FakeOpenAi = Awaited<ReturnType<typeof startFakeOpenAi>>;

/** Runs in flight: AGENT_CONCURRENCY per process, a scribe's cap across processes, slots shared in turn. */
describe('agent runs at scale', function () {
  this.timeout(30_000);
  let fake: FakeOpenAi;
  const harnesses: Harness[] = [];
  const env = () => ({ OPENAI_BASE_URL: fake.baseUrl, OPENAI_MODEL: 'm', OPENAI_MAX_RETRIES: '0', OPENAI_TIMEOUT_MS: '20000', MODELS_ALLOW_PRIVATE: 'true' });

  before(async () => {
    fake = await startFakeOpenAi();
  });
  after(async () => {
    await fake.close();
  });
  // A test's runs end with it: none left working would take the next test's scripted answers.
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((h) => h.close()));
    fake.clear();
  });

  async function harness(options: Parameters<typeof createHarness>[0] = {}): Promise<Harness> {
    const h = await createHarness({ ...options, env: { ...env(), ...options.env } });
    harnesses.push(h);
    return h;
  }

  /** An openai scribe of the tenant's organization whose calls name `model`, so the model server tells its calls apart. */
  async function openAiScribe(h: Harness, t: Tenant, slug: string, model: string, maxConcurrency: number | null = null) {
    const scribe = slug === t.scribe.slug ? t.scribe : await h.services.scribes.create({ organizationId: t.organizationId, slug, name: slug });
    await h.services.scribes.setAgent(t.organizationId, slug, { agent: 'openai', model, maxConcurrency });
    return scribe;
  }

  const chat = (h: Harness, scribe: { id: string; organization_id: string; slug: string; state: string }, message: string) =>
    h.services.sessions.start({ id: scribe.id, organization_id: scribe.organization_id, slug: scribe.slug, state: 'active' }, { message, endImmediately: false });

  const answered = async (h: Harness, ids: readonly string[]) => Number((await h.db('sessions').whereIn('id', ids).where({ state: 'waiting' }).count({ n: '*' }).first())!.n);

  it('keeps AGENT_CONCURRENCY runs in flight in one process: the model server holds 40 calls at once', async () => {
    const h = await harness({ env: { AGENT_CONCURRENCY: '40' }, options: { runOnNewWork: false, dispatchOnAccept: false } });
    const t = await h.tenant({ slug: 'busy' });
    await openAiScribe(h, t, 'busy', 'model-wide');
    for (let i = 0; i < 40; i++) await chat(h, t.scribe as never, `Question ${i}`);
    fake.script(...Array.from({ length: 40 }, () => ({ hang: true as const })));
    h.services.runtime.fill();
    await eventually(async () => (fake.openCalls('model-wide') === 40 ? true : undefined), 10_000);
    expect(h.services.runtime.running).to.equal(40);
    expect((await countRunsInFlight(h.db, [t.scribe.id]))[0]).to.deep.include({ counted: 40, claimed: 40 });
  });

  it('holds each scribe to its max_concurrency across two runtimes on their own connection pools, and fills the cap', async () => {
    const h = await harness({ options: { runOnNewWork: false, dispatchOnAccept: false, runtime: { concurrency: 4 } } });
    const t = await h.tenant({ slug: 'capped-a' });
    const a = await openAiScribe(h, t, 'capped-a', 'model-a', 3);
    const b = await openAiScribe(h, t, 'capped-b', 'model-b', 3);
    // A second process: its own runtime with 4 slots, on its own pool on PostgreSQL. SQLite's
    // driver waits for the one write lock synchronously, so two pools in one Node process would
    // stall each other's event loop; on one pool the runtimes meet the same one writer at a time.
    const ownPool = h.config.databaseKind === 'postgres';
    const db2 = ownPool ? openDatabase(h.config.databaseUrl, { poolSize: h.config.databasePoolSize }) : h.db;
    const other = createServices({
      config: h.config,
      db: db2,
      logger: createLogger('silent'),
      options: { runOnNewWork: false, dispatchOnAccept: false, runtime: { concurrency: 4 } },
    });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) ids.push((await chat(h, a as never, `a${i}`)).id, (await chat(h, b as never, `b${i}`)).id);
      fake.script(...ids.map((_, i) => ({ reply: `Answer ${i}`, delayMs: 200 })));
      // Both look for work often, as processes woken by each other's notifications would.
      const looking = setInterval(() => {
        h.services.runtime.fill();
        other.runtime.fill();
      }, 10);
      try {
        const worked = await Promise.all([
          h.services.runtime.tick(),
          other.runtime.tick(),
          eventually(async () => ((await answered(h, ids)) === ids.length ? true : undefined), 20_000),
        ]);
        await eventually(async () => (h.services.runtime.running + other.runtime.running === 0 ? true : undefined));
        expect(worked[0].sessions + worked[1].sessions).to.be.at.least(1);
      } finally {
        clearInterval(looking);
      }
      // 8 slots between the two, 6 allowed: each scribe had exactly its 3 calls at the model server at the busiest, never more.
      expect([fake.peakCalls('model-a'), fake.peakCalls('model-b')]).to.deep.equal([3, 3]);
      expect(await countRunsInFlight(h.db, [a.id, b.id])).to.deep.equal([a.id, b.id].sort().map((id) => ({ id, counted: 0, claimed: 0 })));
    } finally {
      await other.stop();
      if (ownPool) await db2.destroy();
    }
  });

  it("gives another scribe's run a slot within about one run, however long a backlog is ahead of it", async () => {
    const h = await harness({ options: { runOnNewWork: true, dispatchOnAccept: false, runtime: { concurrency: 4 } } });
    const t = await h.tenant({ slug: 'backlog' });
    const a = await openAiScribe(h, t, 'backlog', 'model-backlog');
    const b = await openAiScribe(h, t, 'newcomer', 'model-newcomer');
    fake.script(...Array.from({ length: 61 }, (_, i) => ({ reply: `Answer ${i}`, delayMs: 100 })));
    const backlog: string[] = [];
    for (let i = 0; i < 60; i++) backlog.push((await chat(h, a as never, `Backlog ${i}`)).id);
    await eventually(async () => (fake.openCalls('model-backlog') === 4 ? true : undefined));
    const newcomer = await chat(h, b as never, 'Me too');
    // Counted from the newcomer's commit: runs of the backlog that started while it was being
    // written (several on a loaded machine, as runs end every 25 ms) were not ahead of it.
    const arrived = fake.seen.length;
    await eventually(async () => (fake.seen.some((call) => call.body.model === 'model-newcomer') ? true : undefined), 10_000);
    const ahead = Math.max(0, fake.seen.findIndex((call) => call.body.model === 'model-newcomer') - arrived);
    // At most one run of the backlog per slot started between the newcomer's arrival and its own run (of 56 still waiting).
    expect(ahead).to.be.at.most(4);
    await eventually(async () => ((await answered(h, [newcomer.id])) === 1 ? true : undefined));
    expect(await answered(h, backlog), 'answered before the backlog was worked through').to.be.below(backlog.length);
  });

  it('keeps a slot in a hundred for a scribe with nothing in flight while runs take long: its first run starts while a backlog holds every other slot', async () => {
    // Runs count as long from the first (reserveForRunsOfMs 0): these hold until the test ends.
    const h = await harness({ env: { AGENT_CONCURRENCY: '100' }, options: { runOnNewWork: true, dispatchOnAccept: false, runtime: { reserveForRunsOfMs: 0 } } });
    const t = await h.tenant({ slug: 'hoarder' });
    const a = await openAiScribe(h, t, 'hoarder', 'model-hoarder');
    const b = await openAiScribe(h, t, 'first-run', 'model-first-run');
    // Were the backlog to take the hundredth slot, its call would take the answer meant for the newcomer.
    fake.script(...Array.from({ length: 99 }, () => ({ hang: true as const })), { reply: 'Hello there' });
    for (let i = 0; i < 120; i++) await chat(h, a as never, `Backlog ${i}`);
    await eventually(async () => (fake.openCalls('model-hoarder') === 99 ? true : undefined), 10_000);
    // Claims that come after (the poll's) leave the reserved slot alone.
    h.services.runtime.fill();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(h.services.runtime.running).to.equal(99);
    expect((await countRunsInFlight(h.db, [a.id]))[0]).to.deep.include({ counted: 99, claimed: 99 });

    const first = await chat(h, b as never, 'Me too');
    await eventually(async () => ((await answered(h, [first.id])) === 1 ? true : undefined), 10_000);
    expect(fake.openCalls('model-hoarder')).to.equal(99);
    expect(fake.seen.filter((call) => call.body.model === 'model-hoarder')).to.have.length(99);
  });

  it('keeps no slot back until runs are known to take long (reserveForRunsOfMs): a backlog takes all of them', async () => {
    const h = await harness({ env: { AGENT_CONCURRENCY: '100' }, options: { runOnNewWork: true, dispatchOnAccept: false } });
    const t = await h.tenant({ slug: 'quick-hoarder' });
    const a = await openAiScribe(h, t, 'quick-hoarder', 'model-quick-hoarder');
    fake.script(...Array.from({ length: 100 }, () => ({ hang: true as const })));
    for (let i = 0; i < 110; i++) await chat(h, a as never, `Backlog ${i}`);
    await eventually(async () => (fake.openCalls('model-quick-hoarder') === 100 ? true : undefined), 10_000);
    expect(h.services.runtime.running).to.equal(100);
  });

  it('records what runs that end within the commit gap of the last batch write together, not a transaction each', async () => {
    const h = await harness({ options: { runOnNewWork: false, dispatchOnAccept: false, runtime: { concurrency: 8, commitGapMs: 1000 } } });
    const t = await h.tenant({ slug: 'gapped' });
    await openAiScribe(h, t, 'gapped', 'model-gapped');
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push((await chat(h, t.scribe as never, `Question ${i}`)).id);
    // Runs of about 3 s, so the gap is a tenth of that (300 ms), ending 30 ms apart: what the
    // first writes goes at once, and what the others write waits for the gap and goes together.
    fake.script(...ids.map((_, i) => ({ reply: `Answer ${i}`, delayMs: 3000 + 30 * i })));
    // The transactions that wrote a run's model call (its trace) or its answer.
    const transactions = new Set<unknown>();
    const written = (query: { sql: string; __knexTxId?: unknown }) => {
      if (/^insert into [`"](agent_calls|session_messages)[`"]/.test(query.sql)) transactions.add(query.__knexTxId);
    };
    h.db.on('query', written);
    try {
      h.services.runtime.fill();
      await eventually(async () => ((await answered(h, ids)) === ids.length ? true : undefined), 15_000);
    } finally {
      h.db.off('query', written);
    }
    // The first call alone, then the rest in one or two (a timer late on a loaded machine splits
    // them). With no commit gap this took 11 or 12 transactions on PostgreSQL and 8 on SQLite.
    expect(transactions.size).to.be.within(2, 4);
    expect(await h.db('agent_calls').whereIn('session_id', ids).count({ n: '*' }).first()).to.deep.equal({ n: 8 });
  });

  it('lets go of a lapsed run of a scribe powered off meanwhile: it waits unclaimed, counted out, and runs once the scribe is on', async () => {
    const h = await harness({ options: { runOnNewWork: false, dispatchOnAccept: false } });
    const t = await h.tenant({ slug: 'sleeper' });
    const { id } = await chat(h, t.scribe as never, 'hello');
    // A process claims it and dies; the scribe is powered off before anyone takes it over.
    const now = new Date().toISOString();
    await claimRuns(h.db, { token: randomUUID(), now, leaseUntil: now, slots: 1 }, (turns) => turns.map((turn) => [turn.id, 1]));
    await h.services.scribes.setState(t.organizationId, 'sleeper', 'powered_off');
    expect(await h.services.runtime.tick()).to.deep.equal({ sessions: 0, tasks: 0 });
    expect(await h.db('sessions').where({ id }).first()).to.include({ state: 'running', claim_token: null, lease_until: null, attempts: 1 });
    expect(await countRunsInFlight(h.db, [t.scribe.id])).to.deep.equal([{ id: t.scribe.id, counted: 0, claimed: 0 }]);
    await h.services.scribes.setState(t.organizationId, 'sleeper', 'active');
    expect(await h.services.runtime.tick()).to.deep.equal({ sessions: 1, tasks: 0 });
    expect(await h.db('sessions').where({ id }).first()).to.include({ state: 'waiting', claim_token: null });
  });

  itOnlyOn('postgres')("dispatches a new receipt and starts its run while every connection of the process's pool is taken: claims have their own", async () => {
    const h = await harness({ env: { DATABASE_POOL_SIZE: '2' }, options: { runOnNewWork: false, dispatchOnAccept: false } });
    const t = await h.tenant({ slug: 'pooled' });
    await openAiScribe(h, t, 'pooled', 'model-pooled');
    const accepted = await h.api
      .post('/api/v1/scribes/pooled/requests')
      .set(t.headers)
      .send({ task: { summary: 'Past the queue' } });
    expect(accepted.status).to.equal(202);
    // Plenty: the model server is shared with the runs other tests left going.
    fake.script(...Array.from({ length: 100 }, () => ({ reply: 'Done.' })));
    // Both connections of the pool, held as a thousand runs' writes would hold them.
    const releases: Array<() => void> = [];
    const holds = [0, 1].map(
      () =>
        h.db.transaction(async (trx) => {
          await trx.raw('select 1');
          await new Promise<void>((resolve) => releases.push(resolve));
        }) as Promise<void>,
    );
    await eventually(async () => (releases.length === 2 ? true : undefined));
    try {
      expect(await h.services.dispatcher.tick()).to.deep.include({ fulfilled: 1 });
      h.services.runtime.fill();
      await eventually(async () => (fake.seen.some((call) => call.body.model === 'model-pooled') ? true : undefined), 5000);
    } finally {
      for (const release of releases) release();
      await Promise.all(holds);
    }
    await h.services.runtime.tick();
    expect(await h.db('tasks').where({ request_id: accepted.body.request.id }).first('status', 'result', 'last_error')).to.deep.equal({
      status: 'done',
      result: 'Done.',
      last_error: null,
    });
  });

  itOnlyOn('postgres')('waits for the scribe whose turn it is when another transaction holds its row, rather than finding nothing', async () => {
    const h = await harness({ options: { runOnNewWork: false, dispatchOnAccept: false } });
    const t = await h.tenant({ slug: 'hot' });
    const { id } = await chat(h, t.scribe as never, 'hello');
    // A run of the scribe finishing: its transaction holds the scribe's row until it commits.
    const finishing = await h.db.transaction();
    await finishing('scribes')
      .where({ id: t.scribe.id })
      .update({ runs_in_flight: finishing.raw('runs_in_flight') });
    const now = new Date().toISOString();
    const claiming = claimRuns(h.db, { token: randomUUID(), now, leaseUntil: new Date(Date.now() + 30_000).toISOString(), slots: 1 }, (turns) => turns.map((turn) => [turn.id, 1]));
    await new Promise((resolve) => setTimeout(resolve, 100));
    await finishing.commit();
    expect((await claiming).runs.map((run) => run.row.id)).to.deep.equal([id]);
  });

  it('counts runs in flight exactly through finish, failure, cancel, hand-back and the takeover of a lapsed lease', async () => {
    let release = () => {};
    let fail = false;
    let asked = 0;
    const held: Agent = {
      answer: ({ signal }) =>
        new Promise((resolve, reject) => {
          asked++;
          if (fail) return reject(new Error('the model endpoint answered HTTP 500'));
          if (signal.aborted) return reject(new Error('aborted'));
          release = () => resolve({ reply: 'held reply' });
          signal.addEventListener('abort', () => reject(new Error('aborted')));
        }),
      work: async () => ({ status: 'done', result: 'done' }),
    };
    const h = await harness({ options: { runOnNewWork: false, dispatchOnAccept: false, agents: { builtin: held }, runtime: { concurrency: 1 } } });
    const t = await h.tenant({ slug: 'counted' });
    await h.services.scribes.setAgent(t.organizationId, 'counted', { maxConcurrency: 5 });
    const count = async () => (await countRunsInFlight(h.db, [t.scribe.id]))[0]!;
    const state = async (id: string) => (await h.db('sessions').where({ id }).first()).state;

    // Finished: claimed (1 in flight), then answered (0).
    const finished = (await chat(h, t.scribe as never, 'finish me')).id;
    h.services.runtime.fill();
    await eventually(async () => (asked === 1 ? true : undefined));
    expect(await count()).to.deep.include({ counted: 1, claimed: 1 });
    release();
    await eventually(async () => ((await state(finished)) === 'waiting' ? true : undefined));
    expect(await count()).to.deep.include({ counted: 0, claimed: 0 });

    // Failed.
    fail = true;
    const failed = (await chat(h, t.scribe as never, 'fail me')).id;
    await h.services.runtime.tick();
    expect(await state(failed)).to.equal('failed');
    expect(await count()).to.deep.include({ counted: 0, claimed: 0 });
    fail = false;

    // Cancelled while in flight, and cancelled while queued.
    const cancelled = (await chat(h, t.scribe as never, 'cancel me')).id;
    h.services.runtime.fill();
    await eventually(async () => ((await count()).claimed === 1 ? true : undefined));
    await h.services.sessions.cancel(staffOf(t), cancelled);
    expect(await count()).to.deep.include({ counted: 0, claimed: 0 });
    await eventually(async () => (h.services.runtime.running === 0 ? true : undefined));
    await h.services.sessions.cancel(staffOf(t), (await chat(h, t.scribe as never, 'never started')).id);
    expect(await count()).to.deep.include({ counted: 0, claimed: 0 });

    // Handed back by a runtime that stops, then taken up and answered.
    const handed = (await chat(h, t.scribe as never, 'hand me back')).id;
    h.services.runtime.fill();
    await eventually(async () => ((await count()).claimed === 1 ? true : undefined));
    await h.services.runtime.stop();
    expect(await h.db('sessions').where({ id: handed }).first()).to.include({ claim_token: null });
    expect(await count()).to.deep.include({ counted: 0, claimed: 0 });

    // A process claims and dies: its lease lapses, a claim takes the run over (counted once), and answers it.
    const now = new Date();
    const lapsed = await claimRuns(h.db, { token: randomUUID(), now: now.toISOString(), leaseUntil: now.toISOString(), slots: 5 }, (turns) => turns.map((turn) => [turn.id, 5]));
    expect(lapsed.runs.map((run) => run.row.id)).to.deep.equal([handed]);
    expect(await count()).to.deep.include({ counted: 1, claimed: 1 });
    const later = new Date(now.getTime() + 1);
    const takeover = await claimRuns(h.db, { token: randomUUID(), now: later.toISOString(), leaseUntil: new Date(later.getTime() + 30_000).toISOString(), slots: 5 }, () => []);
    expect(takeover.runs.map((run) => run.row.id)).to.deep.equal([handed]);
    expect(await count()).to.deep.include({ counted: 1, claimed: 1 });
    // The hand-back was no attempt; these two claims were.
    expect(await h.db('sessions').where({ id: handed }).first()).to.include({ attempts: 2 });
    // That claim's process dies too, and so does the next one's: the runtime after them gives up (attempts used up).
    await h.db('sessions').where({ id: handed }).update({ lease_until: now.toISOString() });
    const third = await claimRuns(h.db, { token: randomUUID(), now: later.toISOString(), leaseUntil: later.toISOString(), slots: 5 }, () => []);
    expect(third.runs.map((run) => run.row.id)).to.deep.equal([handed]);
    expect(await count()).to.deep.include({ counted: 1, claimed: 1 });
    const restarted = createServices({
      config: h.config,
      db: h.db,
      logger: createLogger('silent'),
      options: { runOnNewWork: false, dispatchOnAccept: false, agents: { builtin: held } },
    });
    await restarted.runtime.tick();
    expect(await h.db('sessions').where({ id: handed }).first()).to.include({ state: 'failed', error_message: 'gave up after 3 attempts', claim_token: null });
    expect(await count()).to.deep.include({ counted: 0, claimed: 0 });
    await restarted.stop();
  });
});
