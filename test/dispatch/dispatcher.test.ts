import { expect } from 'chai';
import { createHarness, eventually, testClock, type Harness, type Tenant } from '../helpers/harness.js';
import { failInsertsWhen } from '../helpers/databases.js';
import { createDispatcher } from '../../src/requests/queue.js';
import { createLogger } from '../../src/logger.js';

describe('the dispatcher', () => {
  let h: Harness;
  const clock = testClock();
  before(async () => {
    h = await createHarness({ options: { dispatchOnAccept: false, runOnNewWork: false, clock } });
  });
  after(() => h.close());

  async function submit(t: Tenant, summary = 'work'): Promise<string> {
    const res = await h.api
      .post(`/api/v1/scribes/${t.scribe.slug}/requests`)
      .set(t.headers)
      .send({ task: { summary, acceptance_criteria: 'ok' } });
    expect(res.status).to.equal(202);
    return res.body.request.id;
  }
  const poll = async (t: Tenant, id: string) => (await h.api.get(`/api/v1/requests/${id}`).set(t.headers)).body.request;
  const tasksOf = (requestId: string) => h.db('tasks').where({ request_id: requestId });

  it('moves a receipt accepted → dispatched → fulfilled and creates an open task', async () => {
    const t = await h.tenant();
    const id = await submit(t, 'Write the summary');
    const accepted = await poll(t, id);
    expect(accepted.status).to.equal('accepted');

    clock.advance(5);
    const claimed = await h.services.dispatcher.claim();
    expect(claimed.items.map((r) => r.id)).to.deep.equal([id]);
    const dispatched = await poll(t, id);
    expect(dispatched).to.include({ status: 'dispatched', entity_id: null });
    expect(dispatched.updated_at).to.not.equal(accepted.updated_at);

    clock.advance(5);
    await h.services.dispatcher.work(claimed);
    const fulfilled = await poll(t, id);
    const [task] = await tasksOf(id);
    expect(fulfilled).to.include({ status: 'fulfilled', entity_id: task.id, error_message: null });
    expect(fulfilled.updated_at > dispatched.updated_at).to.equal(true);
    expect(task).to.include({
      status: 'open',
      summary: 'Write the summary',
      title: 'Write the summary',
      acceptance_criteria: 'ok',
      scribe_id: t.scribe.id,
      organization_id: t.organizationId,
    });
    const row = await h.db('requests').where({ id }).first();
    expect(row).to.include({ claim_token: null, attempts: 1, dispatched_at: dispatched.updated_at, completed_at: fulfilled.updated_at });
  });

  it('changes updated_at on every move even when the clock stands still', async () => {
    const t = await h.tenant();
    const id = await submit(t);
    const accepted = await poll(t, id);
    const claimed = await h.services.dispatcher.claim();
    const dispatched = await poll(t, id);
    await h.services.dispatcher.work(claimed);
    const fulfilled = await poll(t, id);
    expect([accepted.status, dispatched.status, fulfilled.status]).to.deep.equal(['accepted', 'dispatched', 'fulfilled']);
    expect(dispatched.updated_at > accepted.updated_at, 'dispatched later than accepted').to.equal(true);
    expect(fulfilled.updated_at > dispatched.updated_at, 'fulfilled later than dispatched').to.equal(true);
    expect(fulfilled.created_at).to.equal(accepted.created_at);
  });

  it('drains everything due in one tick and reports what it did', async () => {
    const t = await h.tenant();
    const ids = await Promise.all(Array.from({ length: 7 }, (_, i) => submit(t, `task ${i}`)));
    const result = await h.services.dispatcher.tick();
    expect(result.fulfilled).to.be.at.least(7);
    for (const id of ids) expect((await poll(t, id)).status).to.equal('fulfilled');
  });

  it('fails the receipt with "Scribe is not active" when the scribe was powered off meanwhile', async () => {
    const t = await h.tenant();
    const id = await submit(t);
    await h.services.scribes.setState(t.organizationId, t.scribe.slug, 'powered_off');
    await h.services.dispatcher.tick();
    expect(await poll(t, id)).to.include({ status: 'failed', entity_id: null, error_message: 'Scribe is not active' });
    expect(await tasksOf(id)).to.have.length(0);
  });

  it('picks up a receipt left dispatched by a crash, after its lease, exactly once', async () => {
    const t = await h.tenant();
    const id = await submit(t);
    // A process claims the receipt and dies before completing it.
    const crashed = await h.services.dispatcher.claim();
    expect(crashed.items.map((r) => r.id)).to.include(id);

    // The restarted process runs its own dispatcher on the same database.
    const restarted = createDispatcher({ db: h.db, clock, logger: createLogger('silent'), createTasks: h.services.tasks.createForReceipts });
    await restarted.tick();
    expect((await poll(t, id)).status, 'the lease still holds').to.equal('dispatched');

    clock.advance(10_001);
    await restarted.tick();
    const fulfilled = await poll(t, id);
    expect(fulfilled.status).to.equal('fulfilled');
    expect(await tasksOf(id)).to.have.length(1);

    // The old claim wakes up late: it must not create a second task or touch the receipt.
    await h.services.dispatcher.work(crashed);
    expect(await tasksOf(id)).to.have.length(1);
    expect(await poll(t, id)).to.deep.equal(fulfilled);
    await restarted.tick();
    expect(await tasksOf(id)).to.have.length(1);
  });

  it('counts no hand-back at shutdown as an attempt: a receipt handed back four times in a row is still fulfilled, once', async () => {
    const t = await h.tenant();
    const id = await submit(t);
    for (let stop = 1; stop <= 4; stop++) {
      // A process claims the receipt and is stopped before it dispatches it.
      const stopping = createDispatcher({ db: h.db, clock, logger: createLogger('silent'), createTasks: h.services.tasks.createForReceipts });
      const claimed = await stopping.claim();
      expect(claimed.items.map((r) => r.id)).to.deep.equal([id]);
      await stopping.stop();
      await stopping.work(claimed);
      expect(await h.db('requests').where({ id }).first(), `stop ${stop}`).to.include({ status: 'dispatched', claim_token: null, attempts: 0 });
    }
    await h.services.dispatcher.tick();
    expect((await poll(t, id)).status).to.equal('fulfilled');
    expect(await tasksOf(id)).to.have.length(1);
  });

  it('never creates two tasks for one receipt when ticks and dispatchers race', async () => {
    const t = await h.tenant();
    const ids = await Promise.all(Array.from({ length: 40 }, (_, i) => submit(t, `race ${i}`)));
    const other = createDispatcher({
      db: h.db,
      clock,
      logger: createLogger('silent'),
      createTasks: h.services.tasks.createForReceipts,
      options: { batchSize: 3, leaseMs: 10_000, maxAttempts: 5, backoffMs: () => 1000 },
    });
    await Promise.all([h.services.dispatcher.tick(), other.tick(), h.services.dispatcher.tick(), other.tick(), h.services.dispatcher.tick()]);
    const counts = await h.db('tasks').whereIn('request_id', ids).groupBy('request_id').select('request_id').count({ n: '*' });
    expect(counts).to.have.length(40);
    expect(counts.every((c) => Number(c.n) === 1)).to.equal(true);
  });

  it('fails the receipts of a scribe powered off and fulfils the others of the same batch, each task with its first events', async () => {
    const on = await h.tenant();
    const off = await h.tenant();
    const kept = await submit(on, 'kept');
    const dropped = await submit(off, 'dropped');
    await h.services.scribes.setState(off.organizationId, off.scribe.slug, 'powered_off');
    const claimed = await h.services.dispatcher.claim();
    expect(claimed.items.map((r) => r.id)).to.have.members([kept, dropped]);
    await h.services.dispatcher.work(claimed);
    const [task] = await tasksOf(kept);
    expect(await poll(on, kept)).to.include({ status: 'fulfilled', entity_id: task.id });
    expect(await poll(off, dropped)).to.include({ status: 'failed', entity_id: null, error_message: 'Scribe is not active' });
    expect(await tasksOf(dropped)).to.have.length(0);
    const events = await h.db('task_events').where({ task_id: task.id }).select('from_status', 'to_status', 'author', 'text');
    expect(events).to.deep.equal([{ from_status: null, to_status: 'open', author: 'system', text: `Created from receipt ${kept}` }]);
    const stream = await h.db('stream_events').where({ subject_id: task.id }).select('seq', 'kind', 'data');
    expect(stream.map((e) => ({ ...e, seq: Number(e.seq) }))).to.deep.equal([{ seq: 1, kind: 'status', data: '{"status":"open"}' }]);
  });

  it('creates no task for a receipt of a batch whose claim was lost, and fulfils the rest exactly once', async () => {
    const t = await h.tenant();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await submit(t, `batch ${i}`));
    // A process claims the batch and stalls past its lease; another takes one of its receipts over.
    const stalled = await h.services.dispatcher.claim();
    expect(stalled.items.map((r) => r.id)).to.have.members(ids);
    clock.advance(10_001);
    const other = createDispatcher({
      db: h.db,
      clock,
      logger: createLogger('silent'),
      createTasks: h.services.tasks.createForReceipts,
      options: { batchSize: 1, leaseMs: 10_000, maxAttempts: 5, backoffMs: () => 1000 },
    });
    const taken = await other.claim();
    expect(taken.items).to.have.length(1);
    const lost = taken.items[0]!.id;

    await h.services.dispatcher.work(stalled);
    const taskCounts = async () => {
      const rows: Array<{ request_id: string; n: number | string }> = await h.db('tasks').whereIn('request_id', ids).groupBy('request_id').select('request_id').count({ n: '*' });
      return Object.fromEntries(rows.map((row) => [row.request_id, Number(row.n)]));
    };
    expect(await taskCounts()).to.deep.equal(Object.fromEntries(ids.filter((id) => id !== lost).map((id) => [id, 1])));
    expect(await h.db('requests').where({ id: lost }).first()).to.include({ status: 'dispatched', claim_token: taken.token, entity_id: null });
    for (const id of ids.filter((id) => id !== lost)) {
      const [task] = await tasksOf(id);
      expect(await poll(t, id)).to.include({ status: 'fulfilled', entity_id: task.id });
    }

    await other.work(taken);
    expect(await taskCounts()).to.deep.equal(Object.fromEntries(ids.map((id) => [id, 1])));
    const [task] = await tasksOf(lost);
    expect(await poll(t, lost)).to.include({ status: 'fulfilled', entity_id: task.id });
  });

  describe('unexpected errors', () => {
    let undoFault: () => Promise<void>;
    beforeEach(async () => {
      undoFault = await failInsertsWhen(h.db, { table: 'tasks', column: 'summary', value: 'boom', message: 'disk on fire' });
    });
    afterEach(() => undoFault());

    it('retries with backoff, without holding up the rest of the batch', async () => {
      const t = await h.tenant();
      const bad = await submit(t, 'boom');
      const good = await submit(t, 'fine');
      const result = await h.services.dispatcher.tick();
      expect(result).to.include({ retried: 1 });
      expect((await poll(t, good)).status).to.equal('fulfilled');
      const row = await h.db('requests').where({ id: bad }).first();
      expect(row).to.include({ status: 'dispatched', attempts: 1, claim_token: null });
      expect(Date.parse(row.available_at) - clock().getTime()).to.equal(1000);

      await h.services.dispatcher.tick();
      expect((await h.db('requests').where({ id: bad }).first()).attempts, 'not before its backoff').to.equal(1);

      await undoFault();
      clock.advance(1000);
      await h.services.dispatcher.tick();
      expect(await poll(t, bad)).to.include({ status: 'fulfilled' });
      expect(await tasksOf(bad)).to.have.length(1);
    });

    it('fails the receipt with a clear message after 5 attempts', async () => {
      const t = await h.tenant();
      const bad = await submit(t, 'boom');
      for (let attempt = 1; attempt <= 5; attempt++) {
        await h.services.dispatcher.tick();
        clock.advance(60_000);
      }
      const failed = await poll(t, bad);
      expect(failed).to.include({ status: 'failed', entity_id: null, error_message: 'Dispatch failed after 5 attempts' });
      expect(await tasksOf(bad)).to.have.length(0);
    });
  });

  it('never throws from a tick, even when the database is gone', async () => {
    const broken = await createHarness({ options: { dispatchOnAccept: false } });
    await broken.db.destroy();
    const result = await broken.services.dispatcher.tick();
    expect(result).to.deep.equal({ fulfilled: 0, failed: 0, retried: 0 });
    await broken.services.stop();
  });
});

describe('dispatch right after submit', () => {
  it('fulfils a receipt without waiting for cron', async () => {
    const h = await createHarness();
    try {
      const t = await h.tenant();
      const res = await h.api
        .post('/api/v1/scribes/atlas/requests')
        .set(t.headers)
        .send({ task: { summary: 'quick' } });
      const id = res.body.request.id;
      const fulfilled = await eventually(async () => {
        const r = (await h.api.get(`/api/v1/requests/${id}`).set(t.headers)).body.request;
        return r.status === 'fulfilled' ? r : undefined;
      }, 1000);
      expect(fulfilled.entity_id).to.be.a('string');
    } finally {
      await h.close();
    }
  });
});
