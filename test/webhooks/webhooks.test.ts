import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { createHarness, staffOf, testClock, type Harness, type Tenant } from '../helpers/harness.js';
import { startWebhookReceiver, type Answer, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { insertWebhookBacklog } from '../helpers/webhook-backlog.js';
import type { Agent } from '../../src/agents/agent.js';
import { EVENT_TYPES } from '../../src/webhooks/events.js';
import { RETRY_DELAYS_MS, defaultWebhookWorkerOptions } from '../../src/webhooks/queue.js';
import { claimInTurn } from '../../src/webhooks/queries.js';
import { messages } from '../../src/webhooks/service.js';

const HOUR = 3_600_000;

/** Answers by what it is given: a task titled "Ask …" waits with a question; "bye" ends a session, "fail" fails its answer. */
const scriptedAgent: Agent = {
  async work({ task }) {
    return task.title.startsWith('Ask') ? { status: 'waiting', question: 'Which quarter?' } : { status: 'done', result: `Done: ${task.title}` };
  },
  async answer({ transcript }) {
    const last = transcript.at(-1)!.text;
    if (last === 'fail') throw new Error('the model endpoint answered HTTP 500');
    return { reply: 'Noted.', end: last === 'bye' };
  },
};

/**
 * Verifies a received request with the standardwebhooks package, an independent verifier. It
 * checks the timestamp against Date.now(), so for the call Date.now() reads the test's clock.
 */
function verifyAt(now: Date, secret: string, request: { body: string; headers: Record<string, unknown> }): unknown {
  const realNow = Date.now;
  Date.now = () => now.getTime();
  try {
    return new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
  } finally {
    Date.now = realNow;
  }
}

describe('outbound webhooks', function () {
  this.timeout(30_000);
  let h: Harness;
  let t: Tenant;
  const clock = testClock();
  const receivers: WebhookReceiver[] = [];

  before(async () => {
    // A 1 s send timeout: room for a busy machine's first deliveries, and short for the timeout test.
    h = await createHarness({
      env: { WEBHOOKS_ALLOW_PRIVATE: 'true' },
      options: { clock, runOnNewWork: false, dispatchOnAccept: false, agents: { builtin: scriptedAgent }, webhooks: { timeoutMs: 1_000, random: () => 0.5 } },
    });
  });
  after(async () => {
    await Promise.all(receivers.map((r) => r.close()));
    await h.close();
  });
  beforeEach(async () => {
    // Each test its own organization, so endpoints of earlier tests hear nothing.
    t = await h.tenant({ slug: 'atlas' });
  });

  async function receiver(answer?: Answer): Promise<WebhookReceiver> {
    const r = await startWebhookReceiver(answer);
    receivers.push(r);
    return r;
  }
  const endpoint = (url: string, events?: string[]) => h.services.webhooks.create(staffOf(t), { url, events });
  const deliveries = (endpointId: string) => h.db('webhook_deliveries').where({ endpoint_id: endpointId }).orderBy('created_at');
  const send = () => h.services.webhookWorker.tick();

  async function submit(title: string): Promise<string> {
    const res = await h.api
      .post(`/api/v1/scribes/${t.scribe.slug}/requests`)
      .set(t.headers)
      .send({ task: { summary: title, title } });
    expect(res.status).to.equal(202);
    return res.body.request.id;
  }
  async function chat(message: string, sessionId?: string): Promise<string> {
    const res = await h.api
      .post(`/api/v1/scribes/${t.scribe.slug}/chat`)
      .set(t.headers)
      .send({ message, ...(sessionId ? { session_id: sessionId } : {}) });
    expect(res.status).to.equal(202);
    return res.body.session_id;
  }

  it('sends every event type, signed so that the standardwebhooks package verifies it, with the bodies docs/webhooks.md gives', async () => {
    const r = await receiver();
    const { endpoint: e, secret } = await endpoint(`${r.url}/hooks`);
    expect(secret).to.match(/^whsec_[A-Za-z0-9+/]+={0,2}$/);

    const fulfilled = await submit('Summarize Q3');
    const asking = await submit('Ask about the budget');
    await h.services.dispatcher.tick();
    await h.services.runtime.tick();
    const waiting = await chat('hello');
    const completed = await chat('bye');
    const failing = await chat('fail');
    await h.services.runtime.tick();
    // Powered off between the receipt's acceptance and its dispatch: it fails.
    const refused = await submit('Too late');
    await h.services.scribes.setState(t.organizationId, t.scribe.slug, 'powered_off');
    await h.services.dispatcher.tick();
    await send();

    const events = r.events();
    expect(events.map((e) => e.type).sort()).to.deep.equal(
      ['request.fulfilled', 'request.fulfilled', 'request.failed', 'task.done', 'task.waiting', 'session.waiting', 'session.completed', 'session.failed'].sort(),
    );
    for (const request of r.received) {
      expect(request.path).to.equal('/hooks');
      expect(request.headers['content-type']).to.equal('application/json');
      const body = JSON.parse(request.body);
      expect(request.headers['webhook-id']).to.equal(body.id);
      expect(body.id).to.match(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(Object.keys(body)).to.deep.equal(['id', 'type', 'created_at', 'data']);
      expect(() => verifyAt(clock(), secret, request)).not.to.throw();
    }
    // data.request is the 2.1 object, as polling answers it.
    for (const id of [fulfilled, refused]) {
      const event = events.find((e) => e.data.request?.id === id)!;
      expect(event.data.request).to.deep.equal((await h.api.get(`/api/v1/requests/${id}`).set(t.headers)).body.request);
    }
    expect(events.find((e) => e.data.request?.id === refused)!.data.request.error_message).to.equal('Scribe is not active');
    const done = events.find((e) => e.type === 'task.done')!.data.task;
    const fulfilledTask = (await h.api.get(`/api/v1/requests/${fulfilled}`).set(t.headers)).body.request.entity_id;
    expect(done).to.deep.equal({ id: fulfilledTask, scribe_id: 'atlas', status: 'done', title: 'Summarize Q3', result: 'Done: Summarize Q3', question: null });
    const asked = events.find((e) => e.type === 'task.waiting')!.data.task;
    expect(asked).to.deep.include({ scribe_id: 'atlas', status: 'waiting', title: 'Ask about the budget', result: null, question: 'Which quarter?' });
    expect((await h.db('tasks').where({ id: asked.id }).first()).request_id).to.equal(asking);
    // A session's answer carries the scribe's reply, its last message; a failure carries none.
    for (const [id, status] of [
      [waiting, 'waiting'],
      [completed, 'completed'],
    ]) {
      const reply = (await h.db('session_messages').where({ session_id: id, author: 'scribe' }).first('text')).text;
      expect(events.find((e) => e.data.session?.id === id)!.data.session).to.deep.equal({ id, scribe_id: 'atlas', status, reply });
    }
    expect(events.find((e) => e.data.session?.id === failing)!.data.session).to.deep.equal({ id: failing, scribe_id: 'atlas', status: 'failed' });
    // One delivery per event, each delivered at the first attempt, with what the endpoint answered.
    const rows = await deliveries(e.id);
    expect(rows.map((d) => [d.status, d.attempts, d.response_status, d.response_body])).to.deep.equal(rows.map(() => ['delivered', 1, 200, 'ok']));
    expect(new Set(rows.map((d) => d.event_id)).size).to.equal(8);
  });

  it('sends an endpoint only the event types it subscribes to, and writes no event no endpoint wants', async () => {
    const r = await receiver();
    const { endpoint: e } = await endpoint(r.url, ['request.failed']);
    await submit('Fulfilled, not wanted');
    await h.services.dispatcher.tick();
    await h.services.runtime.tick();
    await send();
    expect(r.received).to.have.length(0);
    expect(await deliveries(e.id)).to.have.length(0);
    expect(await h.db('webhook_events').where({ organization_id: t.organizationId })).to.have.length(0);

    await submit('Failed, wanted');
    await h.services.scribes.setState(t.organizationId, t.scribe.slug, 'powered_off');
    await h.services.dispatcher.tick();
    await send();
    expect(r.events().map((e) => e.type)).to.deep.equal(['request.failed']);
  });

  it('keeps the headers the last attempt sent (its signature, no secret) and was answered with, and the first 4 KiB of the answer', async () => {
    const r = await receiver(() => ({ status: 418, headers: { 'x-teapot': 'short and stout', 'x-long': 'v'.repeat(300) }, body: 'T'.repeat(5000) }));
    const { endpoint: e, secret } = await endpoint(r.url, ['request.fulfilled']);
    await submit('Keep the exchange');
    await h.services.dispatcher.tick();
    await send();
    const [row] = await deliveries(e.id);
    const sent = JSON.parse(row.request_headers);
    expect(sent).to.deep.equal({
      'webhook-id': r.received[0]!.headers['webhook-id'],
      'webhook-timestamp': r.received[0]!.headers['webhook-timestamp'],
      'webhook-signature': r.received[0]!.headers['webhook-signature'],
      'content-type': 'application/json',
      'user-agent': 'Scribe-Webhooks/1',
    });
    expect(row.request_headers).not.to.contain(secret.slice('whsec_'.length));
    const answered = JSON.parse(row.response_headers);
    expect(answered).to.deep.include({ 'x-teapot': 'short and stout', 'x-long': 'v'.repeat(200) });
    expect(row.response_body).to.equal('T'.repeat(4096));
  });

  it('keeps the headers sent but none answered when the endpoint cannot be reached', async () => {
    const r = await receiver();
    const { endpoint: e } = await endpoint(r.url, ['request.fulfilled']);
    await r.close();
    await submit('Nobody home');
    await h.services.dispatcher.tick();
    await send();
    const [row] = await deliveries(e.id);
    expect(Object.keys(JSON.parse(row.request_headers))).to.deep.equal(['webhook-id', 'webhook-timestamp', 'webhook-signature', 'content-type', 'user-agent']);
    expect(row).to.deep.include({ response_status: null, response_headers: null, response_body: null });
    expect(row.error).to.be.a('string');
  });

  it('retries after a 500 with the same webhook-id, and records the event once delivered', async () => {
    const r = await receiver((_req, n) => (n === 0 ? { status: 500, body: 'boom' } : { status: 204 }));
    const { endpoint: e } = await endpoint(r.url, ['request.fulfilled']);
    await submit('Retry me');
    await h.services.dispatcher.tick();
    await send();
    let [row] = await deliveries(e.id);
    expect(row).to.deep.include({ status: 'pending', attempts: 1, response_status: 500, response_body: 'boom', error: null });
    // The first wait is 5 s (jittered ±10 %; the test's random is the middle).
    expect(Date.parse(row.available_at) - clock().getTime()).to.equal(RETRY_DELAYS_MS[0]);
    expect((await h.db('webhook_endpoints').where({ id: e.id }).first()).failing_since).to.equal(clock().toISOString());

    await send();
    expect(r.received, 'not before its time').to.have.length(1);
    clock.advance(RETRY_DELAYS_MS[0]);
    await send();
    expect(r.received).to.have.length(2);
    expect(r.received[1]!.headers['webhook-id']).to.equal(r.received[0]!.headers['webhook-id']);
    expect(r.received[1]!.body).to.equal(r.received[0]!.body);
    [row] = await deliveries(e.id);
    expect(row).to.deep.include({ status: 'delivered', attempts: 2, response_status: 204, delivered_at: clock().toISOString() });
    expect((await h.db('webhook_endpoints').where({ id: e.id }).first()).failing_since, 'healthy again').to.equal(null);
    await send();
    expect(r.received).to.have.length(2);
  });

  it('treats a redirect as a failure and does not follow it', async () => {
    const target = await receiver();
    const r = await receiver(() => ({ status: 302, headers: { location: `${target.url}/elsewhere` } }));
    const { endpoint: e } = await endpoint(r.url, ['request.fulfilled']);
    await submit('Redirected');
    await h.services.dispatcher.tick();
    await send();
    expect(r.received).to.have.length(1);
    expect(target.received).to.have.length(0);
    const [row] = await deliveries(e.id);
    expect(row).to.deep.include({ status: 'pending', attempts: 1, response_status: 302 });
  });

  it('disables the endpoint on 410 Gone, fails the delivery and enqueues nothing more for it', async () => {
    const r = await receiver(() => ({ status: 410 }));
    const { endpoint: e } = await endpoint(r.url, ['request.fulfilled']);
    await submit('Gone');
    await h.services.dispatcher.tick();
    await send();
    const [row] = await deliveries(e.id);
    expect(row).to.deep.include({ status: 'failed', attempts: 1, response_status: 410 });
    expect(await h.db('webhook_endpoints').where({ id: e.id }).first()).to.deep.include({ disabled_reason: 'The endpoint answered 410 Gone' });
    expect(Boolean((await h.db('webhook_endpoints').where({ id: e.id }).first()).enabled)).to.equal(false);
    await submit('After');
    await h.services.dispatcher.tick();
    await send();
    expect(await deliveries(e.id)).to.have.length(1);
    expect(r.received).to.have.length(1);
  });

  it('retries an attempt that timed out', async () => {
    const r = await receiver((_req, n) => (n === 0 ? { status: 200, delayMs: 2_000 } : { status: 200 }));
    const { endpoint: e } = await endpoint(r.url, ['request.fulfilled']);
    await submit('Slow');
    await h.services.dispatcher.tick();
    await send();
    let [row] = await deliveries(e.id);
    expect(row).to.deep.include({ status: 'pending', attempts: 1, response_status: null, error: 'timed out after 1 s' });
    clock.advance(RETRY_DELAYS_MS[0]);
    await send();
    [row] = await deliveries(e.id);
    expect(row).to.deep.include({ status: 'delivered', attempts: 2 });
    expect(r.received[1]!.headers['webhook-id']).to.equal(r.received[0]!.headers['webhook-id']);
  });

  it('waits as long as Retry-After asks when that is longer than the schedule', async () => {
    const r = await receiver(() => ({ status: 503, headers: { 'retry-after': '120' } }));
    const { endpoint: e } = await endpoint(r.url, ['request.fulfilled']);
    await submit('Busy');
    await h.services.dispatcher.tick();
    await send();
    const [row] = await deliveries(e.id);
    expect(Date.parse(row.available_at) - clock().getTime()).to.equal(120_000);
  });

  it('gives a delivery up after the schedule (about three days), and disables an endpoint that failed for three days', async () => {
    const r = await receiver(() => ({ status: 500 }));
    const { endpoint: e } = await endpoint(r.url, ['request.fulfilled']);
    const started = clock().getTime();
    await submit('Never arrives');
    await h.services.dispatcher.tick();
    await send();
    for (const wait of RETRY_DELAYS_MS) {
      clock.advance(wait);
      await send();
    }
    const [row] = await deliveries(e.id);
    expect(row).to.deep.include({ status: 'failed', attempts: RETRY_DELAYS_MS.length + 1 });
    const span = (clock().getTime() - started) / HOUR;
    expect(span).to.be.within(60, 72);
    expect(Boolean((await h.db('webhook_endpoints').where({ id: e.id }).first()).enabled), 'not yet three days').to.equal(true);

    clock.set(new Date(started + 72 * HOUR).toISOString());
    await submit('Three days on');
    await h.services.dispatcher.tick();
    await send();
    expect(await h.db('webhook_endpoints').where({ id: e.id }).first()).to.deep.include({ disabled_reason: 'Every delivery failed for three days' });
  });

  it('signs with both secrets for a day after a rotation, then with the new one only', async () => {
    const r = await receiver();
    const { endpoint: e, secret: old } = await endpoint(r.url, ['request.fulfilled']);
    const { secret: fresh } = await h.services.webhooks.rotateSecret(staffOf(t), e.id);
    await submit('Rotated');
    await h.services.dispatcher.tick();
    await send();
    const [first] = r.received;
    expect(String(first!.headers['webhook-signature']).split(' ')).to.have.length(2);
    for (const secret of [old, fresh]) expect(() => verifyAt(clock(), secret, first!)).not.to.throw();

    clock.advance(25 * HOUR);
    await submit('A day later');
    await h.services.dispatcher.tick();
    await send();
    const second = r.received[1]!;
    expect(String(second.headers['webhook-signature']).split(' ')).to.have.length(1);
    expect(() => verifyAt(clock(), fresh, second)).not.to.throw();
    expect(() => verifyAt(clock(), old, second)).to.throw('No matching signature found');
  });

  it('sends a test event to one endpoint, and redelivers one delivery or the failed ones of a time range', async () => {
    let failing = true;
    const r = await receiver(() => (failing ? { status: 410 } : { status: 200 }));
    const other = await receiver();
    const { endpoint: e } = await endpoint(r.url);
    await endpoint(other.url);
    const { eventId } = await h.services.webhooks.sendTest(staffOf(t), e.id);
    await send();
    expect(r.events().map((x) => [x.id, x.type])).to.deep.equal([[eventId, 'webhook.test']]);
    expect(other.received, 'the test event goes to its endpoint only').to.have.length(0);
    // 410 disabled it; enabled again, the failed delivery is sent again on request.
    await h.services.webhooks.update(staffOf(t), e.id, { enabled: true });
    failing = false;
    const from = new Date(clock().getTime() - HOUR).toISOString();
    const to = new Date(clock().getTime() + HOUR).toISOString();
    expect(await h.services.webhooks.countFailed(t.organizationId, e.id, { from, to })).to.equal(1);
    expect(await h.services.webhooks.redeliverFailed(staffOf(t), e.id, { from, to })).to.equal(1);
    await send();
    expect(r.received.map((x) => x.headers['webhook-id'])).to.deep.equal([eventId, eventId]);
    const [row] = await deliveries(e.id);
    expect(row).to.deep.include({ status: 'delivered', attempts: 1 });
    await h.services.webhooks.redeliver(staffOf(t), e.id, row.id);
    // Pending again until sent: a second redelivery now is refused, and neither changes nor audits anything.
    const refused = await h.services.webhooks.redeliver(staffOf(t), e.id, row.id).then(
      () => 'redelivered',
      (err: Error) => err.message,
    );
    expect(refused).to.equal('This delivery is still being tried: redeliver it once it has been delivered or has failed');
    expect((await deliveries(e.id))[0]).to.deep.include({ status: 'pending', attempts: 0 });
    await send();
    expect(r.received).to.have.length(3);
    const actions = await h.db('audit_events').where({ subject_type: 'webhook', subject_id: e.id }).orderBy('id').pluck('action');
    expect(actions).to.deep.equal(['webhook.create', 'webhook.test', 'webhook.enable', 'webhook.redeliver', 'webhook.redeliver']);
  });

  it('refuses a bad URL, an unknown event type and, without WEBHOOKS_ALLOW_PRIVATE, a private address', async () => {
    const create = (url: string, events?: string[]) =>
      h.services.webhooks.create(staffOf(t), { url, events }).then(
        () => 'created',
        (err: Error) => err.message,
      );
    expect(await create('ftp://example.com/hook')).to.equal(messages.invalidUrl);
    expect(await create('https://user:pw@example.com/hook')).to.equal(messages.invalidUrl);
    expect(await create('not a url')).to.equal(messages.invalidUrl);
    expect(await create('https://example.com/hook', ['request.fulfilled', 'request.lost'])).to.equal(`Unknown event type: request.lost (expected ${EVENT_TYPES.join(', ')})`);
    expect(await create('https://example.com/hook', [])).to.equal(messages.noEvents);
    expect(await h.db('webhook_endpoints').where({ organization_id: t.organizationId })).to.have.length(0);

    const strict = await createHarness({ options: { clock, runOnNewWork: false, dispatchOnAccept: false } });
    try {
      const s = await strict.tenant({ slug: 'atlas' });
      const r = await receiver();
      const refused = await strict.services.webhooks.create(staffOf(s), { url: r.url }).then(
        () => 'created',
        (err: Error) => err.message,
      );
      expect(refused).to.equal(messages.privateAddress);
      // A name is checked when connecting: localhost resolves to loopback, so nothing is sent.
      const { endpoint: e } = await strict.services.webhooks.create(staffOf(s), { url: `http://localhost:${r.port}/hook`, events: ['request.fulfilled'] });
      await strict.api
        .post('/api/v1/scribes/atlas/requests')
        .set(s.headers)
        .send({ task: { summary: 'x' } });
      await strict.services.dispatcher.tick();
      await strict.services.webhookWorker.tick();
      expect(r.received).to.have.length(0);
      expect(await strict.db('webhook_deliveries').where({ endpoint_id: e.id }).first()).to.deep.include({ status: 'pending', attempts: 1, error: 'address not allowed' });
    } finally {
      await strict.close();
    }
  });

  it('tries a delivery again once the lease of a worker that died holding it has run out', async () => {
    const r = await receiver();
    const { endpoint: e } = await endpoint(r.url);
    // Written as the outbox writes it, without waking this process's worker.
    await insertWebhookBacklog(h.db, { organizationId: t.organizationId, endpointIds: [e.id], events: 1, at: clock() });
    const now = clock().toISOString();
    // A worker claims the delivery as workers do, and dies before the attempt.
    const leaseUntil = new Date(clock().getTime() + defaultWebhookWorkerOptions.leaseMs).toISOString();
    const claimed = await claimInTurn(h.db, { now, leaseUntil, token: 'died', limit: 1, skipOrganizations: [], skipEndpoints: [] }, (turns) =>
      turns.map((turn) => [turn.endpoint_id!, 4]),
    );
    expect(claimed.map((d) => d.endpoint_id)).to.deep.equal([e.id]);
    await send();
    expect(r.received, 'not while the lease holds').to.have.length(0);
    clock.advance(defaultWebhookWorkerOptions.leaseMs);
    await send();
    expect(r.received).to.have.length(1);
    expect((await deliveries(e.id))[0]).to.deep.include({ status: 'delivered', attempts: 1 });
  });

  it("sends a disabled endpoint's pending deliveries once it is enabled again", async () => {
    const r = await receiver((_req, n) => (n === 0 ? { status: 500 } : { status: 200 }));
    const { endpoint: e } = await endpoint(r.url, ['request.fulfilled']);
    await submit('Waits for the endpoint');
    await h.services.dispatcher.tick();
    await send();
    await h.services.webhooks.update(staffOf(t), e.id, { enabled: false });
    clock.advance(RETRY_DELAYS_MS[0]);
    await send();
    expect(r.received, 'a disabled endpoint is not sent to').to.have.length(1);
    await h.services.webhooks.update(staffOf(t), e.id, { enabled: true });
    await send();
    expect(r.received).to.have.length(2);
    expect((await deliveries(e.id))[0]).to.deep.include({ status: 'delivered', attempts: 2 });
  });

  it('delivers each event once with two workers on one database', async () => {
    const r = await receiver();
    await endpoint(r.url, ['request.fulfilled']);
    const ids = await Promise.all(Array.from({ length: 60 }, (_, i) => submit(`Item ${i}`)));
    await h.services.dispatcher.tick();
    const { createWebhookWorker } = await import('../../src/webhooks/queue.js');
    const { createSender } = await import('../../src/webhooks/send.js');
    const { anyAddress } = await import('../../src/net/address-policy.js');
    const { createLogger } = await import('../../src/logger.js');
    const sender = createSender(anyAddress, { timeoutMs: 5_000 });
    const second = createWebhookWorker({
      db: h.db,
      clock,
      logger: createLogger('silent'),
      sender,
      secrets: h.services.secrets,
      options: { ...defaultWebhookWorkerOptions, concurrency: 4 },
    });
    try {
      await Promise.all([send(), second.tick(), send(), second.tick()]);
      await Promise.all([send(), second.tick()]);
    } finally {
      await sender.close();
    }
    const perReceipt = new Map<string, number>();
    for (const event of r.events()) perReceipt.set(event.data.request.id, (perReceipt.get(event.data.request.id) ?? 0) + 1);
    expect([...perReceipt.keys()].sort()).to.deep.equal([...ids].sort());
    expect(
      [...perReceipt.values()].every((n) => n === 1),
      JSON.stringify([...perReceipt]),
    ).to.equal(true);
  });
});
