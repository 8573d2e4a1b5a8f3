import { expect } from 'chai';
import { createHarness, eventually, type Harness, type Tenant } from '../helpers/harness.js';

describe('tasks over the API: GET /tasks/:id, GET /scribes/:id/tasks, POST /tasks/:id/input and /cancel', () => {
  let h: Harness;
  let t: Tenant;
  let other: Tenant;
  before(async () => {
    // The dispatcher and the runtime are driven by hand here, so each state can be seen.
    h = await createHarness({ options: { dispatchOnAccept: false, runOnNewWork: false } });
    t = await h.tenant();
    other = await h.tenant({ slug: 'other' });
  });
  after(() => h.close());

  /** Submits a task and dispatches it; the task's id. */
  async function submitted(task: Record<string, unknown>, tenant = t): Promise<string> {
    const res = await h.api.post(`/api/v1/scribes/${tenant.scribe.slug}/requests`).set(tenant.headers).send({ task });
    expect(res.status).to.equal(202);
    await h.services.dispatcher.tick();
    return (await h.api.get(`/api/v1/requests/${res.body.request.id}`).set(tenant.headers)).body.request.entity_id;
  }
  const read = (id: string, tenant = t) => h.api.get(`/api/v1/tasks/${id}`).set(tenant.headers);
  const input = (id: string, body: unknown, tenant = t) =>
    h.api
      .post(`/api/v1/tasks/${id}/input`)
      .set(tenant.headers)
      .send(body as object);
  const cancel = (id: string, tenant = t) => h.api.post(`/api/v1/tasks/${id}/cancel`).set(tenant.headers);
  const statusOf = async (id: string) => (await h.db('tasks').where({ id }).first('status')).status;

  it('reads an open task with every documented field, and its result once the scribe is done', async () => {
    const id = await submitted({ summary: 'Sum up the week', title: 'Weekly', acceptance_criteria: 'Three lines' });
    const open = await read(id);
    expect(open.status).to.equal(200);
    expect(open.body).to.have.keys('task');
    expect(open.body.task).to.deep.include({
      id,
      scribe_id: 'atlas',
      status: 'open',
      title: 'Weekly',
      summary: 'Sum up the week',
      acceptance_criteria: 'Three lines',
      result: null,
      question: null,
      error: null,
      attachments: [],
      usage: { input_tokens: 0, output_tokens: 0 },
    });
    expect(open.body.task.request_id).to.match(/^req_/);
    expect(Object.keys(open.body.task)).to.deep.equal([
      'id',
      'scribe_id',
      'request_id',
      'status',
      'title',
      'summary',
      'acceptance_criteria',
      'result',
      'question',
      'error',
      'attachments',
      'usage',
      'created_at',
      'updated_at',
    ]);
    await h.services.runtime.tick();
    const done = (await read(id)).body.task;
    expect(done.status).to.equal('done');
    expect(done.result).to.match(/^Done: Weekly\nSummary: Sum up the week/);
  });

  it('answers a waiting task over the API: 202 with the task, now open, which the scribe then finishes', async () => {
    const id = await submitted({ summary: 'What should we launch next?' });
    await h.services.runtime.tick();
    const waiting = (await read(id)).body.task;
    expect(waiting).to.include({
      status: 'waiting',
      question: 'Before I start: what would a good answer to "What should we launch next?" look like? Please give acceptance criteria.',
    });
    const answered = await input(id, { input: 'A one-line product name' });
    expect(answered.status).to.equal(202);
    expect(answered.body.task).to.include({ id, status: 'open' });
    expect(await statusOf(id)).to.equal('open');
    await h.services.runtime.tick();
    const done = (await read(id)).body.task;
    expect(done.status).to.equal('done');
    expect(done.result).to.include('Input from staff: A one-line product name');
    expect(done.question, 'the last question asked stays readable').to.include('Before I start');
  });

  it('answers input with the task as the input left it, open, though the runtime takes it up at once; a retry with the same Idempotency-Key gets that same answer', async () => {
    // Here new work wakes the runtime, as in a running server: it may claim the task before the answer is sent.
    const live = await createHarness({ options: { dispatchOnAccept: false } });
    try {
      const tenant = await live.tenant();
      const res = await live.api
        .post(`/api/v1/scribes/${tenant.scribe.slug}/requests`)
        .set(tenant.headers)
        .send({ task: { summary: 'What should we name it?' } });
      await live.services.dispatcher.tick();
      const id = (await live.db('requests').where({ id: res.body.request.id }).first('entity_id')).entity_id;
      const statusNow = async () => (await live.db('tasks').where({ id }).first('status')).status;
      await eventually(async () => ((await statusNow()) === 'waiting' ? true : undefined));
      const send = () => live.api.post(`/api/v1/tasks/${id}/input`).set(tenant.headers).set('Idempotency-Key', 'name-it').send({ input: 'Short and plain' });
      const answered = await send();
      expect([answered.status, answered.body.task.status]).to.deep.equal([202, 'open']);
      await eventually(async () => ((await statusNow()) === 'done' ? true : undefined));
      const replayed = await send();
      expect([replayed.status, replayed.headers['idempotent-replayed']]).to.deep.equal([202, 'true']);
      expect(replayed.body).to.deep.equal(answered.body);
    } finally {
      await live.close();
    }
  });

  it('refuses input to a task that is not waiting with 409 "Task is not waiting", and a missing or blank one with 422 "Input is required"', async () => {
    const id = await submitted({ summary: 'Plain work' });
    for (const body of [{}, { input: '' }, { input: '   ' }, { input: null }]) {
      const res = await input(id, body);
      expect([res.status, res.body]).to.deep.equal([422, { error: 'Input is required' }]);
    }
    expect((await input(id, { input: 42 })).body).to.deep.equal({ error: 'input must be a string' });
    const res = await input(id, { input: 'more' });
    expect([res.status, res.body]).to.deep.equal([409, { error: 'Task is not waiting' }]);
    expect(await statusOf(id)).to.equal('open');
    expect(await h.db('task_events').where({ task_id: id }).pluck('to_status'), 'nothing recorded').to.deep.equal(['open']);
  });

  it('cancels a task: 200 with the task cancelled, then 409 "Task is already finished"; the runtime never starts it', async () => {
    const id = await submitted({ summary: 'Never mind' });
    const res = await cancel(id);
    expect(res.status).to.equal(200);
    expect(res.body.task).to.include({ id, status: 'cancelled' });
    expect(await statusOf(id)).to.equal('cancelled');
    await h.services.runtime.tick();
    expect(await statusOf(id)).to.equal('cancelled');
    expect(await h.db('task_events').where({ task_id: id }).pluck('to_status'), 'never worked').to.deep.equal(['open', 'cancelled']);
    const again = await cancel(id);
    expect([again.status, again.body]).to.deep.equal([409, { error: 'Task is already finished' }]);
  });

  it("answers another organization's task, an unknown id and a malformed id with the same 404, and changes nothing", async () => {
    const id = await submitted({ summary: 'Mine alone' });
    for (const [path, send] of [
      [`/api/v1/tasks/${id}`, null],
      [`/api/v1/tasks/${id}/input`, { input: 'x' }],
      [`/api/v1/tasks/${id}/cancel`, {}],
    ] as const) {
      const res = send ? await h.api.post(path).set(other.headers).send(send) : await h.api.get(path).set(other.headers);
      expect([res.status, res.body], path).to.deep.equal([404, { error: 'Task not found' }]);
    }
    for (const unknown of ['01935f00-0000-7000-8000-000000000000', 'not-a-task']) {
      const res = await read(unknown);
      expect([res.status, res.body]).to.deep.equal([404, { error: 'Task not found' }]);
    }
    expect(await statusOf(id)).to.equal('open');
  });

  it('answers 401 without a key or with a wrong one', async () => {
    const id = await submitted({ summary: 'Keyed' });
    expect((await h.api.get(`/api/v1/tasks/${id}`)).status).to.equal(401);
    expect((await h.api.post(`/api/v1/tasks/${id}/cancel`).set('X-Api-Key', 'sk_wrong')).status).to.equal(401);
    expect(await statusOf(id)).to.equal('open');
  });

  it('replays a cancel with the same Idempotency-Key instead of answering 409', async () => {
    const id = await submitted({ summary: 'Cancel once' });
    const first = await cancel(id).set('Idempotency-Key', 'cancel-once');
    const second = await cancel(id).set('Idempotency-Key', 'cancel-once');
    expect(first.status).to.equal(200);
    expect([second.status, second.headers['idempotent-replayed']]).to.deep.equal([200, 'true']);
    expect(second.body).to.deep.equal(first.body);
  });

  it("lists a scribe's tasks newest first, by status, a page at a time with a cursor", async () => {
    const scribe = await h.services.scribes.create({ organizationId: t.organizationId, slug: 'pager', name: 'Pager' });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await submitted({ summary: `page ${i}` }, { ...t, scribe }));
    await h.api.post(`/api/v1/tasks/${ids[1]}/cancel`).set(t.headers);
    const first = await h.api.get('/api/v1/scribes/pager/tasks?limit=2').set(t.headers);
    expect(first.status).to.equal(200);
    expect(first.body.tasks.map((task: { id: string }) => task.id)).to.deep.equal([ids[4], ids[3]]);
    const rest = await h.api.get(`/api/v1/scribes/pager/tasks?limit=10&after=${first.body.next_cursor}`).set(t.headers);
    expect(rest.body.tasks.map((task: { id: string }) => task.id)).to.deep.equal([ids[2], ids[1], ids[0]]);
    expect(rest.body.next_cursor).to.equal(null);
    const cancelled = await h.api.get('/api/v1/scribes/pager/tasks?status=cancelled').set(t.headers);
    expect(cancelled.body).to.deep.equal({ tasks: [(await read(ids[1]!)).body.task], next_cursor: null });
    expect((await h.api.get('/api/v1/scribes/pager/tasks?status=finished').set(t.headers)).body).to.deep.equal({ error: 'Invalid status' });
    expect((await h.api.get('/api/v1/scribes/pager/tasks?after=nope').set(t.headers)).body).to.deep.equal({ error: 'Invalid cursor format' });
    const foreign = await h.api.get('/api/v1/scribes/pager/tasks').set(other.headers);
    expect([foreign.status, foreign.body]).to.deep.equal([404, { error: 'Scribe not found' }]);
  });
});
