import { expect } from 'chai';
import { createHarness, eventually, staffOf, type Harness, type Tenant } from '../helpers/harness.js';
import { testDatabaseKind } from '../helpers/databases.js';
import { startWebhookReceiver, type Answer, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { insertWebhookBacklog } from '../helpers/webhook-backlog.js';
import { createBackground } from '../../src/work/background.js';
import { createLogger } from '../../src/logger.js';
import { openDatabase } from '../../src/db/knex.js';
import { anyAddress } from '../../src/net/address-policy.js';
import { createSender } from '../../src/webhooks/send.js';
import { createWebhookWorker, defaultWebhookWorkerOptions, type WebhookWorkerOptions } from '../../src/webhooks/queue.js';
import { claimInTurn, type ShareOut } from '../../src/webhooks/queries.js';

/** Each event of the backlog goes to every endpoint, as an event all of them subscribe to does. */
const BACKLOG_EVENTS = 8_000;

/**
 * How deliveries are shared among organizations and endpoints, with real receivers and the
 * worker as a server runs it: the once-a-second poll, and a nudge when an event is recorded.
 */
describe('webhook deliveries shared among organizations and endpoints', function () {
  this.timeout(60_000);
  const receivers: WebhookReceiver[] = [];
  /** The test's harness, closed after it. */
  let opened: Harness | undefined;

  afterEach(async () => {
    // Receivers first: the attempts they hold end at once rather than at their timeout.
    await Promise.all(receivers.splice(0).map((r) => r.close()));
    await opened?.close();
    opened = undefined;
  });

  async function harness(webhooks: Partial<WebhookWorkerOptions & { timeoutMs: number }>): Promise<Harness> {
    opened = await createHarness({ env: { WEBHOOKS_ALLOW_PRIVATE: 'true' }, options: { runOnNewWork: false, dispatchOnAccept: false, webhooks } });
    return opened;
  }
  async function receiver(answer?: Answer): Promise<WebhookReceiver> {
    const r = await startWebhookReceiver(answer);
    receivers.push(r);
    return r;
  }
  /**
   * A port on loopback where nothing listens: every attempt is refused. Taken after the test's
   * receivers are listening, since the system may give the port it frees to the next one.
   */
  async function closedPort(): Promise<number> {
    const probe = await startWebhookReceiver();
    await probe.close();
    return probe.port;
  }
  const endpoint = async (h: Harness, t: Tenant, url: string) => (await h.services.webhooks.create(staffOf(t), { url })).endpoint.id;
  /** The worker polled once a second as a server runs it, alone; stopped before the harness closes. */
  async function sendingJob(h: Harness) {
    const background = createBackground({ runners: [h.services.webhookWorker], wakeups: h.services.wakeups });
    // Starting nudges it, rather than waiting for the first poll.
    await background.start();
    return background;
  }
  /** How many of these endpoints' deliveries have been attempted. */
  async function attempted(h: Harness, endpointIds: string[]): Promise<number> {
    const row = await h.db('webhook_deliveries').whereIn('endpoint_id', endpointIds).where('attempts', '>=', 1).count({ n: '*' }).first();
    return Number(row!.n);
  }

  it("delivers another organization's test event within a few seconds while one organization has 24,000 failing deliveries due, and goes on attempting those", async () => {
    const h = await harness({ timeoutMs: 1_000 });
    const failing = await receiver(() => ({ status: 500, body: 'down' }));
    // Holds each request past the timeout: every attempt takes the whole second.
    const holding = await receiver(() => ({ status: 200, delayMs: 10_000 }));
    // The quiet organization's, listening before the refused port is freed (it once got that port, and the backlog's deliveries).
    const healthy = await receiver();
    const refused = await closedPort();
    const busy = await h.tenant();
    const busyEndpoints = [
      await endpoint(h, busy, `http://127.0.0.1:${refused}/hook`),
      await endpoint(h, busy, `${failing.url}/hook`),
      await endpoint(h, busy, `${holding.url}/hook`),
    ];
    await insertWebhookBacklog(h.db, { organizationId: busy.organizationId, endpointIds: busyEndpoints, events: BACKLOG_EVENTS });
    const job = await sendingJob(h);
    try {
      // Counted at the receivers, not in the database, so that watching costs the worker nothing.
      await eventually(async () => (failing.received.length >= 100 ? true : undefined), 20_000);

      const quiet = await h.tenant({ slug: 'quiet' });
      const quietEndpoint = await endpoint(h, quiet, `${healthy.url}/hook`);
      const before = failing.received.length;
      const sent = Date.now();
      const { eventId } = await h.services.webhooks.sendTest(staffOf(quiet), quietEndpoint);
      // The bound: a few seconds. Ahead of it in one queue for the whole install, it would wait for the other's 24,000.
      await healthy.waitFor(1, 5_000);
      expect(Date.now() - sent).to.be.below(5_000);
      expect(healthy.events().map((e) => [e.id, e.type])).to.deep.equal([[eventId, 'webhook.test']]);

      // Both go on: the backlog is still being attempted, at every endpoint, and most of it is still ahead.
      await eventually(async () => (failing.received.length >= before + 50 ? true : undefined), 10_000);
      expect(holding.received.length).to.be.above(0);
      expect(await attempted(h, busyEndpoints.slice(0, 1)), 'attempts at the endpoint refusing connections').to.be.above(0);
      expect(await attempted(h, busyEndpoints)).to.be.below((BACKLOG_EVENTS * busyEndpoints.length) / 2);
    } finally {
      await job.stop();
    }
  });

  it("keeps a dead endpoint to its share of slots, so the same organization's healthy endpoint gets its deliveries meanwhile", async () => {
    // Four slots, two per endpoint: without the cap, the dead endpoint's older backlog would take all four.
    const h = await harness({ concurrency: 4, perEndpoint: 2, timeoutMs: 10_000 });
    const hanging = await receiver(() => ({ status: 200, delayMs: 20_000 }));
    const healthy = await receiver();
    const t = await h.tenant();
    const dead = await endpoint(h, t, `${hanging.url}/hook`);
    const alive = await endpoint(h, t, `${healthy.url}/hook`);
    for (let i = 0; i < 10; i++) await h.services.webhooks.sendTest(staffOf(t), dead);
    await hanging.waitFor(2);
    for (let i = 0; i < 20; i++) await h.services.webhooks.sendTest(staffOf(t), alive);

    await healthy.waitFor(20);
    // All twenty arrived while the dead endpoint's first two attempts were still waiting for an answer.
    expect(await attempted(h, [dead]), 'no attempt at the dead endpoint has ended yet').to.equal(0);
    expect(hanging.received).to.have.length(2);
    await eventually(async () => ((await attempted(h, [alive])) === 20 ? true : undefined));
  });

  it('brings every delivery to its endpoint, retried ones too, with two workers while events keep coming', async () => {
    // Each first attempt of an event at an endpoint fails, and the retry comes 10 ms later.
    const tries = new Map<string, number>();
    const r = await receiver((request) => {
      const key = `${request.path} ${request.headers['webhook-id']}`;
      tries.set(key, (tries.get(key) ?? 0) + 1);
      return tries.get(key) === 1 ? { status: 500 } : { status: 204 };
    });
    const options = { concurrency: 8, perEndpoint: 2, perOrganization: 4, retryScale: 0.002 };
    const h = await harness(options);
    const lines: Array<{ organizationId: string; endpointIds: string[] }> = [];
    for (let o = 0; o < 3; o++) {
      const t = await h.tenant();
      lines.push({ organizationId: t.organizationId, endpointIds: [await endpoint(h, t, `${r.url}/${o}/a`), await endpoint(h, t, `${r.url}/${o}/b`)] });
    }
    // The second worker has connections of its own, as another process would (SQLite: one per process).
    const db = testDatabaseKind === 'postgres' ? openDatabase(h.config.databaseUrl) : h.db;
    const sender = createSender(anyAddress, { timeoutMs: 5_000 });
    const second = createWebhookWorker({
      db,
      clock: () => new Date(),
      logger: createLogger('silent'),
      sender,
      secrets: h.services.secrets,
      options: { ...defaultWebhookWorkerOptions, ...options },
    });
    const fills = setInterval(() => [h.services.webhookWorker, second].forEach((w) => w.fill()), 50);
    try {
      for (let i = 0; i < 30; i++) {
        await insertWebhookBacklog(i % 2 ? h.db : db, { ...lines[i % lines.length]!, events: 3 });
        second.nudge();
      }
      const events = 30 * 3;
      // Well before a lease (60 s) would bring back a delivery whose turn was lost.
      await eventually(
        async () => (Number((await h.db('webhook_deliveries').where({ status: 'delivered' }).count({ n: '*' }).first())!.n) === events * 2 ? true : undefined),
        20_000,
      );
    } finally {
      clearInterval(fills);
      await second.stop();
      await sender.close();
      if (db !== h.db) await db.destroy();
    }
    expect(tries.size).to.equal(180);
    expect(
      [...tries.values()].every((n) => n === 2),
      'each attempted twice: the failure, then the retry',
    ).to.equal(true);
  });

  it("sends an event to all of one organization's endpoints on being told of it, not one endpoint per poll", async () => {
    const h = await harness({});
    const r = await receiver();
    const t = await h.tenant();
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push(await endpoint(h, t, `${r.url}/${i}`));
    await insertWebhookBacklog(h.db, { organizationId: t.organizationId, endpointIds: ids, events: 1 });
    // Told once, as recording an event tells it; no poll runs, so what arrives came of that alone.
    h.services.webhookWorker.nudge();
    await r.waitFor(8, 5_000);
    expect(r.received.map((request) => request.path).sort()).to.deep.equal(ids.map((_, i) => `/${i}`).sort());
    await eventually(async () => ((await attempted(h, ids)) === 8 ? true : undefined));
  });

  it('finds the deliveries of an organization whose turn a claim that began later has just passed on', async () => {
    const h = await harness({});
    const r = await receiver();
    const t = await h.tenant();
    const at = new Date();
    const ids = [await endpoint(h, t, `${r.url}/a`), await endpoint(h, t, `${r.url}/b`)];
    await insertWebhookBacklog(h.db, { organizationId: t.organizationId, endpointIds: ids, events: 3, at });
    const terms = (now: Date, token: string) => ({
      now: now.toISOString(),
      leaseUntil: new Date(now.getTime() + 60_000).toISOString(),
      token,
      limit: 1,
      skipOrganizations: [],
      skipEndpoints: [],
    });
    const oneEach: ShareOut = (turns) => turns.flatMap((turn) => (turn.endpoint_id ? [[turn.endpoint_id, 1] as [string, number]] : []));
    // Two claims under way at once: the one that began later (its clock 20 ms ahead) commits first and puts the turns it served at its own time.
    const later = await claimInTurn(h.db, terms(new Date(at.getTime() + 20), 'later'), oneEach);
    const earlier = await claimInTurn(h.db, terms(new Date(at.getTime() + 10), 'earlier'), oneEach);
    expect(later).to.have.length(1);
    expect(earlier, 'a turn a little ahead of this claim is a place in the line, not a time to wait for').to.have.length(1);
    expect(earlier[0]!.endpoint_id, "the other endpoint's turn").to.not.equal(later[0]!.endpoint_id);
    const claimed = await h.db('webhook_deliveries').whereIn('endpoint_id', ids).whereNotNull('claim_token').orderBy('claim_token').pluck('claim_token');
    expect(claimed).to.deep.equal(['earlier', 'later']);
  });

  it('attempts each delivery once with two workers sharing several organizations and endpoints', async () => {
    const h = await harness({ concurrency: 4, perEndpoint: 2, perOrganization: 3 });
    const r = await receiver();
    const endpointIds: string[] = [];
    for (let o = 0; o < 3; o++) {
      const t = await h.tenant();
      const ids = [await endpoint(h, t, `${r.url}/${o}/a`), await endpoint(h, t, `${r.url}/${o}/b`)];
      endpointIds.push(...ids);
      await insertWebhookBacklog(h.db, { organizationId: t.organizationId, endpointIds: ids, events: 20 });
    }
    const sender = createSender(anyAddress, { timeoutMs: 5_000 });
    const second = createWebhookWorker({
      db: h.db,
      clock: () => new Date(),
      logger: createLogger('silent'),
      sender,
      secrets: h.services.secrets,
      options: { ...defaultWebhookWorkerOptions, concurrency: 3, perEndpoint: 1 },
    });
    try {
      await Promise.all([h.services.webhookWorker.tick(), second.tick(), h.services.webhookWorker.tick()]);
      await Promise.all([h.services.webhookWorker.tick(), second.tick()]);
    } finally {
      await second.stop();
      await sender.close();
    }
    // Once per event and endpoint: the receiver tells endpoints apart by path.
    const counts = new Map<string, number>();
    for (const request of r.received) {
      const key = `${request.path} ${request.headers['webhook-id']}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    expect(counts.size).to.equal(120);
    expect(
      [...counts].filter(([, n]) => n !== 1),
      'attempted more than once',
    ).to.deep.equal([]);
    const rows = await h.db('webhook_deliveries').whereIn('endpoint_id', endpointIds).select('status', 'attempts');
    expect(rows).to.have.length(120);
    expect(rows.every((d) => d.status === 'delivered' && d.attempts === 1)).to.equal(true);
  });
});
