import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { createHarness, eventually, type Harness, type Tenant } from '../helpers/harness.js';
import { startFakeOpenAi } from '../helpers/fake-openai.js';

type Fake = Awaited<ReturnType<typeof startFakeOpenAi>>;
interface Sse {
  id: number;
  event: string;
  data: Record<string, unknown>;
}

/** Serves `h`'s app on a port of its own, as a second process on the same database would be. */
async function listen(h: Harness): Promise<{ url: string; close(): Promise<void> }> {
  const server = h.app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/**
 * Reads a server-sent event stream until it ends (or `until` returns true for an event, when
 * the client hangs up as one that drops its connection would): the events, and whether the
 * server ended the stream, with any comment lines.
 */
function readStream(url: string, headers: Record<string, string>, until?: (event: Sse, all: Sse[]) => boolean) {
  return new Promise<{ status: number; type: string; events: Sse[]; comments: string[]; ended: boolean; body: string }>((resolve, reject) => {
    const req = http.get(url, { headers }, (res) => {
      const events: Sse[] = [];
      const comments: string[] = [];
      let buffer = '';
      let body = '';
      res.setEncoding('utf8');
      const done = (ended: boolean) => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), events, comments, ended, body });
      res.on('data', (chunk: string) => {
        body += chunk;
        buffer += chunk;
        for (let at = buffer.indexOf('\n\n'); at >= 0; at = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          if (block.startsWith(':')) {
            comments.push(block);
            continue;
          }
          const field = (name: string) =>
            block
              .split('\n')
              .find((line) => line.startsWith(`${name}: `))
              ?.slice(name.length + 2);
          const event = { id: Number(field('id')), event: field('event')!, data: JSON.parse(field('data')!) };
          events.push(event);
          if (until?.(event, events)) {
            req.destroy();
            done(false);
            return;
          }
        }
      });
      res.on('end', () => done(true));
    });
    req.on('error', (err) => (err.message === 'socket hang up' ? undefined : reject(err)));
  });
}

describe('event streams: GET /tasks/:id/events and /sessions/:id/events', function () {
  this.timeout(30_000);
  let fake: Fake;
  let h: Harness;
  let second: Harness;
  let t: Tenant;
  let one: { url: string; close(): Promise<void> };
  let two: { url: string; close(): Promise<void> };
  const REPLY = 'The tide turns at 06:12; the ferry waits for it and leaves at 06:40 sharp.';

  before(async () => {
    fake = await startFakeOpenAi();
    const env = { OPENAI_BASE_URL: fake.baseUrl, OPENAI_MODEL: 'm', OPENAI_MAX_RETRIES: '0', MODELS_ALLOW_PRIVATE: 'true' };
    h = await createHarness({ env, options: { runOnNewWork: false, dispatchOnAccept: false, streams: { pollMs: 20 } } });
    // A second process on the same database: its own services, feed and HTTP server.
    second = await createHarness({
      env: { ...env, DATA_DIR: h.dir },
      options: { runOnNewWork: false, dispatchOnAccept: false, streams: { pollMs: 20 } },
      sharedDatabaseUrl: h.config.databaseUrl,
    });
    t = await h.tenant({ slug: 'ferry' });
    await h.services.scribes.setAgent(t.organizationId, 'ferry', { agent: 'openai' });
    one = await listen(h);
    two = await listen(second);
  });
  after(async () => {
    await one.close();
    await two.close();
    await second.close();
    await h.close();
    await fake.close();
  });

  const headers = () => ({ 'x-api-key': t.key });
  async function chat(message: string): Promise<string> {
    const res = await h.api.post('/api/v1/scribes/ferry/chat').set(t.headers).send({ message });
    return res.body.session_id;
  }
  /** Submits a task and dispatches its receipt: the task's id. */
  async function submitTask(summary: string): Promise<string> {
    const submitted = await h.api.post('/api/v1/scribes/ferry/requests').set(t.headers).send({ task: { summary } });
    await h.services.dispatcher.tick();
    return (await h.db('requests').where({ id: submitted.body.request.id }).first()).entity_id;
  }

  it('streams a reply as deltas that add up to it, then the message, then ends after the final status', async () => {
    fake.script({ reply: REPLY, chunks: 6, chunkDelayMs: 150 });
    const id = await chat('When does the ferry leave?');
    const reading = readStream(`${one.url}/api/v1/sessions/${id}/events`, headers(), (event) => event.event === 'status' && event.data.status === 'waiting');
    await h.services.runtime.tick();
    const { status, type, events } = await reading;
    expect([status, type]).to.deep.equal([200, 'text/event-stream; charset=utf-8']);
    expect(events.map((e) => e.id)).to.deep.equal(events.map((_, i) => i + 1));
    expect(events.slice(0, 2).map((e) => [e.event, e.data.status ?? e.data.text])).to.deep.equal([
      ['status', 'queued'],
      ['message', 'When does the ferry leave?'],
    ]);
    const deltas = events.filter((e) => e.event === 'delta');
    expect(deltas.length).to.be.greaterThan(1);
    expect(deltas.map((e) => e.data.text).join('')).to.equal(REPLY);
    const reply = events.find((e) => e.event === 'message' && e.data.author === 'scribe')!;
    expect(reply.data).to.include({ text: REPLY, partial: false });
    expect(new Set(deltas.map((e) => e.data.message_id))).to.deep.equal(new Set([reply.data.id]));
    expect(events.at(-1)!.data).to.include({ id, status: 'waiting' });
  });

  it('sends deltas that add up to the recorded text when the model writes blank lines and spaces around it', async () => {
    // The whole text, blank ends and all, is written before the model pauses: the stored draft
    // then holds what the model wrote so far, and the answer recorded is trimmed.
    fake.script({ reply: '\n\nThe ferry leaves at nine. \n', chunks: 3, holdAt: 3 });
    const id = await chat('When does the ferry leave?');
    const reading = readStream(`${one.url}/api/v1/sessions/${id}/events`, headers(), (event) => event.event === 'status' && event.data.status === 'waiting');
    const ticking = h.services.runtime.tick();
    await eventually(async () => ((await h.db('session_messages').where({ session_id: id, author: 'scribe', partial: true }).first()) ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 600));
    fake.release();
    await ticking;
    const { events } = await reading;
    const reply = events.find((e) => e.event === 'message' && e.data.author === 'scribe')!;
    expect(reply.data.text).to.equal('The ferry leaves at nine.');
    expect(
      events
        .filter((e) => e.event === 'delta')
        .map((e) => e.data.text)
        .join(''),
    ).to.equal('The ferry leaves at nine.');
  });

  it('reads exactly the remaining events after a reconnect with Last-Event-ID, from the other process too', async () => {
    fake.script({ reply: REPLY, chunks: 5, chunkDelayMs: 50 });
    const id = await chat('Ferry times?');
    await h.services.runtime.tick();
    await h.services.sessions.cancel({ type: 'api_key', id: null, label: 'client', organizationId: t.organizationId }, id);
    const whole = await readStream(`${one.url}/api/v1/sessions/${id}/events`, headers());
    expect(whole.ended, 'the stream ends at the cancel').to.equal(true);
    expect(whole.events.at(-1)!.data.status).to.equal('cancelled');
    for (const server of [one, two]) {
      const rest = await readStream(`${server.url}/api/v1/sessions/${id}/events`, { ...headers(), 'last-event-id': '3' });
      expect(rest.events).to.deep.equal(
        whole.events
          .filter((e) => e.id > 3)
          .map((e) => (e.event === 'status' ? { ...e, data: { ...e.data, updated_at: rest.events.find((r) => r.id === e.id)!.data.updated_at } } : e)),
      );
    }
  });

  it('follows a task to done from another process than the one working it, and ends there', async () => {
    fake.script({ reply: 'Timetable summarised.', chunks: 3, chunkDelayMs: 30 });
    const taskId = await submitTask('Summarise the timetable');
    const reading = readStream(`${two.url}/api/v1/tasks/${taskId}/events`, headers());
    await eventually(async () => (second.services.streams.open === 1 ? true : undefined));
    await h.services.runtime.tick();
    const { events, ended } = await reading;
    expect(ended).to.equal(true);
    expect(events.filter((e) => e.event === 'status').map((e) => e.data.status)).to.deep.equal(['open', 'in_progress', 'done']);
    expect(
      events
        .filter((e) => e.event === 'delta')
        .map((e) => e.data.text)
        .join(''),
    ).to.equal('Timetable summarised.');
    expect(events.at(-1)!.data).to.include({ id: taskId, status: 'done', result: 'Timetable summarised.' });
    expect(second.services.streams.open, 'nothing held once it ended').to.equal(0);
  });

  it("tells a run's end, stored as one row, as the reply's delta, the message and the status, and resumes within them", async () => {
    fake.script({ reply: 'Whole at once.' });
    const id = await chat('A quick one?');
    await h.services.runtime.tick();
    await eventually(async () => ((await h.db('sessions').where({ id }).first('state')).state === 'waiting' ? true : undefined));
    const waiting = (event: Sse) => event.event === 'status' && event.data.status === 'waiting';
    const whole = await readStream(`${one.url}/api/v1/sessions/${id}/events`, headers(), waiting);
    const end = whole.events.slice(-3);
    expect(end.map((e) => e.event)).to.deep.equal(['delta', 'message', 'status']);
    expect(end[0]!.data).to.deep.equal({ message_id: end[1]!.data.id, text: 'Whole at once.' });
    expect(end[1]!.data).to.include({ author: 'scribe', text: 'Whole at once.', partial: false });
    const rows = await h.db('stream_events').where({ subject_id: id }).orderBy('seq').select('seq', 'kind');
    expect(rows.at(-1), 'the end is one row, numbered as its last event').to.deep.equal({ seq: end[2]!.id, kind: 'status' });
    expect(rows).to.have.length(whole.events.length - 2);
    for (const server of [one, two])
      for (const after of [end[0]!.id, end[1]!.id]) {
        const rest = await readStream(`${server.url}/api/v1/sessions/${id}/events`, { ...headers(), 'last-event-id': String(after) }, waiting);
        expect(rest.events.map((e) => [e.id, e.event])).to.deep.equal(whole.events.filter((e) => e.id > after).map((e) => [e.id, e.event]));
      }

    fake.script({ reply: 'Timetable in one piece.' });
    const taskId = await submitTask('Summarise it at once');
    await h.services.runtime.tick();
    await eventually(async () => ((await h.db('tasks').where({ id: taskId }).first('status')).status === 'done' ? true : undefined));
    const task = await readStream(`${one.url}/api/v1/tasks/${taskId}/events`, headers());
    const told = [
      [1, 'status', 'open'],
      [2, 'status', 'in_progress'],
      [3, 'delta', 'Timetable in one piece.'],
      [4, 'message', 'Timetable in one piece.'],
      [5, 'status', 'done'],
    ];
    // The result's message before the final status, after which the stream ends.
    expect([task.ended, task.events.map((e) => [e.id, e.event, e.data.status ?? e.data.text])]).to.deep.equal([true, told]);
    for (const [server, after] of [
      [two, 1],
      [one, 3],
      [two, 4],
    ] as const) {
      const resumed = await readStream(`${server.url}/api/v1/tasks/${taskId}/events`, { ...headers(), 'last-event-id': String(after) });
      expect([resumed.ended, resumed.events.map((e) => [e.id, e.event, e.data.status ?? e.data.text])], `after ${after}`).to.deep.equal([true, told.slice(after)]);
    }
    // A client that reconnects after the final status (as EventSource does when a stream ends)
    // gets nothing more, and the stream ends.
    const past = await readStream(`${two.url}/api/v1/tasks/${taskId}/events`, { ...headers(), 'last-event-id': '5' });
    expect([past.ended, past.events]).to.deep.equal([true, []]);
  });

  it('follows a session ended at once, completed from its first event, until its answer is recorded, and ends there; as does a stream opened afterwards', async () => {
    fake.script({ reply: 'Noted: the ferry is late.' });
    const res = await h.api.post('/api/v1/scribes/ferry/chat').set(t.headers).send({ message: 'FYI: the ferry is late', end_session_immediately: true });
    const id = res.body.session_id;
    const reading = readStream(`${one.url}/api/v1/sessions/${id}/events`, headers());
    await eventually(async () => (h.services.streams.open === 1 ? true : undefined));
    await h.services.runtime.tick();
    const live = await reading;
    const told = live.events.map((e) => [e.id, e.event, e.data.status ?? e.data.text]);
    expect([live.ended, told]).to.deep.equal([
      true,
      [
        [1, 'status', 'completed'],
        [2, 'message', 'FYI: the ferry is late'],
        [3, 'delta', 'Noted: the ferry is late.'],
        [4, 'message', 'Noted: the ferry is late.'],
        [5, 'status', 'completed'],
      ],
    ]);
    const later = await readStream(`${two.url}/api/v1/sessions/${id}/events`, headers());
    expect([later.ended, later.events.map((e) => [e.id, e.event, e.data.status ?? e.data.text])]).to.deep.equal([true, told]);
  });

  it('sends a keep-alive comment while nothing happens', async () => {
    const id = await chat('Anyone there?');
    const quiet = await createHarness({ env: { DATA_DIR: h.dir }, options: { runOnNewWork: false, streams: { keepAliveMs: 100 } }, sharedDatabaseUrl: h.config.databaseUrl });
    const server = await listen(quiet);
    try {
      const body = await new Promise<string>((resolve) => {
        const req = http.get(`${server.url}/api/v1/sessions/${id}/events`, { headers: headers() }, (res) => {
          let text = '';
          res.on('data', (chunk) => {
            text += chunk;
            if (text.includes('\n\n: keep-alive\n\n')) {
              req.destroy();
              resolve(text);
            }
          });
        });
      });
      expect(body.split('\n\n').filter((block) => block.startsWith(':'))[0]).to.equal(': keep-alive');
    } finally {
      await server.close();
      await quiet.close();
    }
  });

  it("answers an unknown id, another organization's and a missing key with JSON, not a stream", async () => {
    const other = await h.tenant({ slug: 'elsewhere' });
    const id = await chat('Mine');
    for (const [path, key, status, error] of [
      [`/api/v1/sessions/${id}/events`, other.key, 404, 'Session not found'],
      ['/api/v1/tasks/01935f00-0000-7000-8000-000000000000/events', t.key, 404, 'Task not found'],
      [`/api/v1/sessions/${id}/events`, '', 401, 'API key is required'],
    ] as const) {
      const res = await h.api.get(path).set('x-api-key', key);
      expect([res.status, res.headers['content-type'], res.body], path).to.deep.equal([status, 'application/json; charset=utf-8', { error }]);
    }
  });

  it('answers a Last-Event-ID that is not a whole number with 400 JSON, and takes none, 0 or a blank one as the start', async () => {
    const id = await chat('When?');
    await h.services.sessions.cancel({ type: 'api_key', id: null, label: 'client', organizationId: t.organizationId }, id);
    const whole = await readStream(`${one.url}/api/v1/sessions/${id}/events`, headers());
    for (const given of ['1e1', '0x4', 'abc', '-1', '3.5', '4,5', '9'.repeat(16)]) {
      const res = await h.api.get(`/api/v1/sessions/${id}/events`).set('x-api-key', t.key).set('last-event-id', given);
      expect([res.status, res.headers['content-type'], res.body], given).to.deep.equal([
        400,
        'application/json; charset=utf-8',
        { error: 'Invalid Last-Event-ID: send the id of the last event received, a whole number' },
      ]);
    }
    for (const given of ['0', '', ' ']) {
      const again = await readStream(`${one.url}/api/v1/sessions/${id}/events`, { ...headers(), 'last-event-id': given });
      expect(
        again.events.map((e) => e.id),
        JSON.stringify(given),
      ).to.deep.equal(whole.events.map((e) => e.id));
    }
    const rest = await readStream(`${one.url}/api/v1/sessions/${id}/events`, { ...headers(), 'last-event-id': ' 2 ' });
    expect(rest.events.map((e) => e.id)).to.deep.equal(whole.events.map((e) => e.id).filter((n) => n > 2));
  });
});
