import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { startFakeOpenAi } from '../helpers/fake-openai.js';

type Fake = Awaited<ReturnType<typeof startFakeOpenAi>>;

/** What a client does with one conversation and one task, over the API alone, against a scripted model. */
describe('a client over the API alone, against a scripted model', function () {
  this.timeout(30_000);
  let fake: Fake;
  let h: Harness;
  let t: Tenant;

  before(async () => {
    fake = await startFakeOpenAi();
    h = await createHarness({
      env: { OPENAI_BASE_URL: fake.baseUrl, OPENAI_MODEL: 'm', OPENAI_MAX_RETRIES: '0' },
      options: { runOnNewWork: false, dispatchOnAccept: false },
    });
    t = await h.tenant({ slug: 'clerk' });
    await h.services.scribes.setAgent(t.organizationId, 'clerk', { agent: 'openai' });
  });
  after(async () => {
    await h.close();
    await fake.close();
  });

  it('holds a conversation of three turns: each answer read back, and the model given the whole transcript each time', async () => {
    fake.script({ reply: 'Hello! What can I do?' }, { reply: 'Acme is based in Zurich.' }, { reply: 'You are welcome.' });
    const started = await h.api.post('/api/v1/scribes/clerk/chat').set(t.headers).send({ message: 'Hi' });
    const id = started.body.session_id;
    await h.services.runtime.tick();
    for (const message of ['Where is Acme based?', 'Thanks!']) {
      const sent = await h.api.post(`/api/v1/sessions/${id}/messages`).set(t.headers).send({ message });
      expect(sent.status).to.equal(202);
      await h.services.runtime.tick();
    }
    const { body } = await h.api.get(`/api/v1/sessions/${id}`).set(t.headers);
    expect(body.session.status).to.equal('waiting');
    expect(body.session.messages.map((m: { author: string; text: string; partial: boolean }) => [m.author, m.text, m.partial])).to.deep.equal([
      ['user', 'Hi', false],
      ['scribe', 'Hello! What can I do?', false],
      ['user', 'Where is Acme based?', false],
      ['scribe', 'Acme is based in Zurich.', false],
      ['user', 'Thanks!', false],
      ['scribe', 'You are welcome.', false],
    ]);
    expect(body.session.usage).to.deep.equal({ input_tokens: 360, output_tokens: 90 });
    // The third call saw the two turns before it.
    const last = fake.seen
      .at(-1)!
      .body.messages.filter((m) => m.role !== 'system')
      .map((m) => [m.role, m.content]);
    expect(last).to.deep.equal([
      ['user', 'Hi'],
      ['assistant', 'Hello! What can I do?'],
      ['user', 'Where is Acme based?'],
      ['assistant', 'Acme is based in Zurich.'],
      ['user', 'Thanks!'],
    ]);
  });

  it('answers a message sent while the scribe is answering after that answer, in order', async () => {
    fake.script({ reply: 'First answer.', delayMs: 300 }, { reply: 'Second answer.' });
    const id = (await h.api.post('/api/v1/scribes/clerk/chat').set(t.headers).send({ message: 'One' })).body.session_id;
    const working = h.services.runtime.tick();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await h.api.get(`/api/v1/sessions/${id}`).set(t.headers)).body.session.status).to.equal('running');
    expect((await h.api.post(`/api/v1/sessions/${id}/messages`).set(t.headers).send({ message: 'Two' })).status).to.equal(202);
    await working;
    await h.services.runtime.tick();
    const { body } = await h.api.get(`/api/v1/sessions/${id}`).set(t.headers);
    expect(body.session.messages.map((m: { author: string; text: string }) => `${m.author}: ${m.text}`)).to.deep.equal([
      'user: One',
      'user: Two',
      'scribe: First answer.',
      'scribe: Second answer.',
    ]);
    expect(body.session.status).to.equal('waiting');
  });

  it('takes a task that asks a question, answers it over the API, and reads its result', async () => {
    fake.script(
      { toolCalls: [{ name: 'ask_for_input', arguments: { question: 'Which quarter?' } }] },
      { toolCalls: [{ name: 'complete_task', arguments: { result: 'Q3 revenue grew 12 %.' } }] },
    );
    const submitted = await h.api
      .post('/api/v1/scribes/clerk/requests')
      .set(t.headers)
      .send({ task: { summary: 'Summarize revenue' } });
    await h.services.dispatcher.tick();
    const taskId = (await h.api.get(`/api/v1/requests/${submitted.body.request.id}`).set(t.headers)).body.request.entity_id;
    await h.services.runtime.tick();
    expect((await h.api.get(`/api/v1/tasks/${taskId}`).set(t.headers)).body.task).to.include({ status: 'waiting', question: 'Which quarter?', result: null });
    const answered = await h.api.post(`/api/v1/tasks/${taskId}/input`).set(t.headers).send({ input: 'Q3' });
    expect([answered.status, answered.body.task.status]).to.deep.equal([202, 'open']);
    await h.services.runtime.tick();
    const done = (await h.api.get(`/api/v1/tasks/${taskId}`).set(t.headers)).body.task;
    expect(done).to.deep.include({ status: 'done', result: 'Q3 revenue grew 12 %.', question: 'Which quarter?', error: null, usage: { input_tokens: 240, output_tokens: 60 } });
    // The model saw the answer as the task's input.
    expect(JSON.stringify(fake.seen.at(-1)!.body.messages)).to.include('Q3');
  });
});
