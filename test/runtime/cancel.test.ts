import { expect } from 'chai';
import { createHarness, eventually, staffOf, type Harness, type Tenant } from '../helpers/harness.js';
import { startFakeOpenAi } from '../helpers/fake-openai.js';
import { runAdmin } from '../helpers/cli.js';
import { signIn } from '../helpers/console.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';

/** Cancelling tasks and sessions: queued work never starts, work in flight stops in whichever process runs it. */
describe('cancelling tasks and sessions', function () {
  this.timeout(30_000);
  let fake: Awaited<ReturnType<typeof startFakeOpenAi>>;
  let h: Harness;
  let t: Tenant;

  before(async () => {
    fake = await startFakeOpenAi();
    h = await createHarness({
      env: { OPENAI_BASE_URL: fake.baseUrl, OPENAI_MODEL: 'm', OPENAI_MAX_RETRIES: '0', OPENAI_TIMEOUT_MS: '20000', WEBHOOKS_ALLOW_PRIVATE: 'true' },
      options: { runOnNewWork: false, dispatchOnAccept: false, runtime: { cancelCheckMs: 200 } },
    });
    t = await h.tenant({ slug: 'oracle' });
    await h.services.scribes.setAgent(t.organizationId, 'oracle', { agent: 'openai' });
  });
  after(async () => {
    await h.close();
    await fake.close();
  });
  afterEach(() => {
    fake.clear();
    fake.seen.length = 0;
    fake.hits.abandoned = 0;
  });

  async function submitTask(summary: string): Promise<string> {
    const res = await h.api.post('/api/v1/scribes/oracle/requests').set(t.headers).send({ task: { summary } });
    await h.services.dispatcher.tick();
    return (await h.db('requests').where({ id: res.body.request.id }).first()).entity_id;
  }
  const taskRow = (id: string) => h.db('tasks').where({ id }).first();
  const sessionRow = (id: string) => h.db('sessions').where({ id }).first();

  /** Starts the runtime on what is due and waits until the model server holds `n` calls. */
  async function holdCalls(n: number): Promise<void> {
    h.services.runtime.fill();
    await eventually(async () => (fake.seen.length >= n ? true : undefined), 5_000);
  }

  it('stops a task in flight: the model call is aborted, and nothing of the run is recorded after the cancel', async () => {
    const receiver = await startWebhookReceiver();
    try {
      await h.services.webhooks.create(staffOf(t), { url: receiver.url, events: ['task.cancelled'] });
      const id = await submitTask('Think for a long time');
      fake.script({ hang: true });
      await holdCalls(1);
      expect(await taskRow(id)).to.include({ status: 'in_progress' });

      const cancelled = await h.services.tasks.cancel(staffOf(t), id);
      expect(cancelled).to.include({ id, status: 'cancelled', result: null });
      await eventually(async () => (fake.hits.abandoned === 1 ? true : undefined), 2_000);
      await eventually(async () => (h.services.runtime.running === 0 ? true : undefined), 2_000);

      expect(await taskRow(id)).to.include({ status: 'cancelled', claim_token: null, lease_until: null, result: null, last_error: null });
      const events = await h.db('task_events').where({ task_id: id }).orderBy('id').select('from_status', 'to_status', 'author', 'text');
      expect(events.at(-1)).to.deep.equal({ from_status: 'in_progress', to_status: 'cancelled', author: 'staff', text: 'Cancelled by staff@example.com' });
      expect(await h.db('agent_calls').where({ task_id: id }), 'the aborted call left no trace').to.deep.equal([]);
      const event = await h.db('webhook_events').where({ type: 'task.cancelled' }).first();
      expect(JSON.parse(event.body).data.task).to.deep.equal({ id, scribe_id: 'oracle', status: 'cancelled', title: 'Think for a long time', result: null, question: null });
      expect(await h.db('audit_events').where({ action: 'task.cancel', subject_id: id }).first()).to.include({ actor_label: 'staff@example.com' });
    } finally {
      await receiver.close();
    }
  });

  it('cancels a queued session before it starts: the scribe is never called', async () => {
    const res = await h.api.post('/api/v1/scribes/oracle/chat').set(t.headers).send({ message: 'Never mind' });
    const id = res.body.session_id;
    const session = await h.services.sessions.cancel(staffOf(t), id);
    expect(session.status).to.equal('cancelled');
    expect(Boolean((await h.db('sessions').where({ id }).first('reply_due')).reply_due), 'it owes no reply').to.equal(false);
    await h.services.runtime.tick();
    expect(fake.seen).to.have.length(0);
    expect(
      session.messages.map((m) => [m.author, m.text]),
      'as the API shows it',
    ).to.deep.equal([['user', 'Never mind']]);
    expect(await h.db('session_messages').where({ session_id: id }).orderBy('id').select('author', 'text')).to.deep.equal([
      { author: 'user', text: 'Never mind' },
      { author: 'system', text: 'Cancelled by staff@example.com' },
    ]);
    const again = await h.services.sessions.cancel(staffOf(t), id).catch((err: Error & { status: number }) => err);
    expect(again).to.include({ status: 409, message: 'Session is closed' });
  });

  it('stops an answer under way when the cancel comes from another process (the admin CLI), within 2 s', async () => {
    const res = await h.api.post('/api/v1/scribes/oracle/chat').set(t.headers).send({ message: 'Take your time' });
    const id = res.body.session_id;
    fake.script({ hang: true });
    await holdCalls(1);
    expect(await sessionRow(id)).to.include({ state: 'running' });

    const cli = await runAdmin(['session', 'cancel', '--id', id], { DATA_DIR: h.dir, DATABASE_URL: h.config.databaseUrl });
    expect(cli).to.deep.equal({ code: 0, stdout: `${JSON.stringify({ id, status: 'cancelled' })}\n`, stderr: '' });
    await eventually(async () => (fake.hits.abandoned === 1 ? true : undefined), 2_000);
    await eventually(async () => (h.services.runtime.running === 0 ? true : undefined), 2_000);
    const messages = await h.db('session_messages').where({ session_id: id }).orderBy('id').pluck('author');
    expect(messages, 'no reply and no failure note after the cancel').to.deep.equal(['user', 'system']);
    expect(await sessionRow(id)).to.include({ state: 'cancelled', error_message: null, claim_token: null });
  });

  it("refuses to cancel finished work with 409, and another organization's as not found", async () => {
    const id = await submitTask('Quick one');
    fake.script({ toolCalls: [{ name: 'complete_task', arguments: { result: 'Done quickly.' } }] });
    await h.services.runtime.tick();
    expect(await taskRow(id)).to.include({ status: 'done' });
    const finished = await h.services.tasks.cancel(staffOf(t), id).catch((err: Error & { status: number }) => err);
    expect(finished).to.include({ status: 409, message: 'Task is already finished' });
    const other = await h.tenant({ slug: 'elsewhere' });
    const foreign = await h.services.tasks.cancel(staffOf(other), id).catch((err: Error & { status: number }) => err);
    expect(foreign).to.include({ status: 404, message: 'Task not found' });
    expect(await taskRow(id)).to.include({ status: 'done' });

    const cli = await runAdmin(['task', 'cancel', '--id', id], { DATA_DIR: h.dir, DATABASE_URL: h.config.databaseUrl });
    expect(cli).to.deep.equal({ code: 1, stdout: '', stderr: 'error: Task is already finished\n' });
    const unknown = await runAdmin(['task', 'cancel', '--id', '01935f00-0000-7000-8000-000000000000'], { DATA_DIR: h.dir, DATABASE_URL: h.config.databaseUrl });
    expect(unknown).to.deep.equal({ code: 1, stdout: '', stderr: 'error: Task not found\n' });
  });

  it("gives admins a Cancel button on a waiting task's page, and viewers none (nor the action)", async () => {
    const id = await submitTask('Ask me something');
    fake.script({ toolCalls: [{ name: 'ask_for_input', arguments: { question: 'Which quarter?' } }] });
    await h.services.runtime.tick();
    expect(await taskRow(id)).to.include({ status: 'waiting' });
    const viewer = await signIn(h, t, 'viewer');
    expect((await viewer.get(`/tasks/${id}`)).text).not.to.include('Cancel task');
    expect((await viewer.post(`/tasks/${id}/cancel`)).status).to.equal(403);
    const admin = await signIn(h, t, 'admin');
    expect((await admin.get(`/tasks/${id}`)).text).to.include('Cancel task');
    expect((await admin.post(`/tasks/${id}/cancel`)).status).to.equal(303);
    const page = (await admin.get(`/tasks/${id}`)).text;
    expect(page).to.include('Task cancelled.').and.not.include('Cancel task');
    expect(await taskRow(id)).to.include({ status: 'cancelled' });
    await admin.post(`/tasks/${id}/cancel`);
    expect((await admin.get(`/tasks/${id}`)).text).to.include('Task is already finished');
  });
});
