/**
 * Outbound webhooks: fulfilled receipt → webhook received on an idle server, deliveries per
 * second from a backlog, and how deliveries are shared: a claim's cost beside another
 * organization's backlog of 50,000, and another organization's test event under that backlog.
 */
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/knex.js';
import { dialectOf, type DatabaseKind } from '../../src/db/dialect.js';
import { createLogger } from '../../src/logger.js';
import { createServices } from '../../src/services.js';
import { operatorActor } from '../../src/audit/service.js';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Db } from '../../src/db/knex.js';
import { claimInTurn } from '../../src/webhooks/queries.js';
import { defaultWebhookWorkerOptions } from '../../src/webhooks/queue.js';
import { startPostgresCluster } from '../helpers/postgres-cluster.js';
import { provision } from '../helpers/provision.js';
import { insertWebhookBacklog } from '../helpers/webhook-backlog.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';
import { PRODUCTION_SETTINGS, percentiles, provisionBench } from './api.js';
import { machineLine, startServer, writeSection } from './lib.js';

const SAMPLES = 200;
const BACKLOG = 1_000;
const WARMUP = 20;
/** The other organization's backlog: two endpoints, 25,000 events each. */
const OTHERS_BACKLOG = 50_000;
const CLAIMS = 500;
const CLAIM_WARMUP = 100;
const TEST_EVENTS = 20;
const KINDS: DatabaseKind[] = ['sqlite', 'postgres'];
const LABEL: Record<DatabaseKind, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };

export async function benchWebhooks(dataDir: string): Promise<void> {
  const arrived = new Map<string, number>();
  const receiver = await startWebhookReceiver((request) => {
    arrived.set(JSON.parse(request.body).data.request?.id ?? JSON.parse(request.body).id, Date.now());
    return { status: 204 };
  });
  const { key, organizationId, install } = await provisionBench(dataDir, 'sqlite');
  const env = { ...install.env, ...PRODUCTION_SETTINGS, WEBHOOKS_ALLOW_PRIVATE: 'true' };
  const config = loadConfig(env);

  // The endpoint, made as the CLI makes it.
  {
    const db = openDatabase(config.databaseUrl);
    const services = createServices({ config, db, logger: createLogger('silent') });
    await services.webhooks.create(operatorActor(organizationId), { url: `${receiver.url}/hook`, events: ['request.fulfilled'] });
    await services.stop();
    await db.destroy();
  }

  // Idle: one submit at a time, 20 ms apart; from the receipt's completed_at to the POST's arrival.
  const server = await startServer(['dist/main.js'], env, '/healthz', { quiet: true });
  const ids: string[] = [];
  try {
    // As the API bench does: a second to settle, and warm-up calls not counted (the first
    // deliveries of a new process wait for its first connections and compiled code).
    await new Promise((resolve) => setTimeout(resolve, 1000));
    for (let i = -WARMUP; i < SAMPLES; i++) {
      const res = await fetch(`${server.url}/api/v1/scribes/bench/requests`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ task: { summary: `hook ${i}` } }),
      });
      const { id } = ((await res.json()) as { request: { id: string } }).request;
      if (i >= 0) ids.push(id);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  } finally {
    await server.stop();
  }
  const db = openDatabase(config.databaseUrl);
  const rows: Array<{ id: string; completed_at: string }> = await db('requests').whereIn('id', ids).select('id', 'completed_at');
  const idle = percentiles(
    rows.filter((r) => arrived.has(r.id)).map((r) => arrived.get(r.id)! - Date.parse(r.completed_at)),
    SAMPLES,
  );
  console.log(`fulfilled → webhook received when idle: p50 ${idle.p50} ms, p99 ${idle.p99} ms`);

  // A backlog: 1,000 test events queued with the worker stopped, then drained by one process.
  const services = createServices({ config, db, logger: createLogger('silent'), options: { runOnNewWork: false, dispatchOnAccept: false } });
  await services.webhookWorker.stop();
  const [endpoint] = await services.webhooks.list(organizationId);
  for (let i = 0; i < BACKLOG; i++) await services.webhooks.sendTest(operatorActor(organizationId), endpoint!.id);
  const drainer = createServices({ config, db, logger: createLogger('silent'), options: { runOnNewWork: false, dispatchOnAccept: false } });
  const before = arrived.size;
  const started = process.hrtime.bigint();
  await drainer.webhookWorker.tick();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const sent = arrived.size - before;
  await drainer.stop();
  await services.stop();
  await db.destroy();
  await receiver.close();
  if (sent !== BACKLOG) throw new Error(`delivered ${sent} of ${BACKLOG}`);
  const perSecond = Math.round(BACKLOG / seconds);
  console.log(`webhook backlog: ${BACKLOG} deliveries in ${seconds.toFixed(2)} s = ${perSecond}/s`);

  const cluster = await startPostgresCluster({ durable: true });
  // The test helpers create PostgreSQL databases on the server named here.
  process.env.TEST_POSTGRES_URL = cluster.url;
  const sharing = new Map<DatabaseKind, Awaited<ReturnType<typeof benchSharing>>>();
  try {
    for (const kind of KINDS) sharing.set(kind, await benchSharing(path.join(dataDir, `sharing-${kind}`), kind));
  } finally {
    await cluster.stop();
  }
  const cell = (kind: DatabaseKind, f: (s: Awaited<ReturnType<typeof benchSharing>>) => string) => f(sharing.get(kind)!);
  const row = (name: string, f: (s: Awaited<ReturnType<typeof benchSharing>>) => string) => `| ${name} | ${cell('sqlite', f)} | ${cell('postgres', f)} |`;

  writeSection('webhooks', [
    '## Outbound webhooks',
    '',
    `One run: ${machineLine()}; SQLite; the receiver is a local Node HTTP server answering 204.`,
    '',
    '| measure | value |',
    '|---|---:|',
    `| fulfilled receipt → webhook received, idle server, p50 (${SAMPLES} sequential submits) | ${idle.p50} ms |`,
    `| fulfilled receipt → webhook received, p99 | ${idle.p99} ms |`,
    `| ${BACKLOG.toLocaleString('en')} queued deliveries to one endpoint sent by one process (${defaultWebhookWorkerOptions.perEndpoint} at once, its share) | ${seconds.toFixed(2)} s (${perSecond.toLocaleString('en')} deliveries/s) |`,
    '',
    "Target (issue 15): p50 under 20 ms. Latency runs from the receipt's `completed_at` (the",
    'transaction that wrote the event) to the moment the receiver read the POST, both on this',
    "machine's clock (millisecond resolution).",
    '',
    'Sharing, both databases in the same run. A claim is what the worker does for one free',
    `slot: whose turn it is, the delivery, the turns passed on (the mean of ${CLAIMS}, after ${CLAIM_WARMUP} not`,
    'counted). The test events go to a local receiver one at a time, while the worker attempts',
    "the other organization's backlog (its endpoints refuse connections).",
    '',
    '| measure | SQLite | PostgreSQL |',
    '|---|---:|---:|',
    row("claim, only one organization's deliveries due", (s) => `${s.empty.toFixed(2)} ms`),
    row(`claim, beside another organization's ${OTHERS_BACKLOG.toLocaleString('en')} due deliveries`, (s) => `${s.beside.toFixed(2)} ms`),
    row('ratio (backlog / one organization)', (s) => (s.beside / s.empty).toFixed(2)),
    row("of those claims, the quiet organization's", (s) => `${Math.round(s.quietShare * 100)} %`),
    row(`another organization's test event sent → received, p50 (${TEST_EVENTS} sequential)`, (s) => `${s.testEvent.p50} ms`),
    row('the same, slowest', (s) => `${s.testEvent.max} ms`),
    '',
    "Target (issue 26): the claim's cost flat beside a backlog (ratio near 1); another",
    "organization's delivery within a few seconds.",
  ]);
}

/** Claims for one free slot, as the worker makes them, until `n` are made; which organizations they served. */
async function claimOneAtATime(db: Db, n: number): Promise<{ msPerClaim: number; served: string[] }> {
  const served: string[] = [];
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const now = new Date();
    const terms = { now: now.toISOString(), leaseUntil: new Date(now.getTime() + 60_000).toISOString(), token: randomUUID(), limit: 1, skipOrganizations: [], skipEndpoints: [] };
    const [claimed] = await claimInTurn(db, terms, (turns) => turns.flatMap((turn) => (turn.endpoint_id ? [[turn.endpoint_id, 1] as [string, number]] : [])));
    if (claimed) served.push(claimed.organization_id);
  }
  return { msPerClaim: Number(process.hrtime.bigint() - started) / 1e6 / n, served };
}

/**
 * On one database: the claim's cost with one organization's deliveries due, then beside
 * another organization's 50,000; then, with the worker running as in a server, how long
 * a third organization's test events take to arrive.
 */
async function benchSharing(dataDir: string, kind: DatabaseKind) {
  const p = await provision(dataDir, 'bench', { kind });
  await p.close();
  const config = loadConfig({ ...p.env, ...PRODUCTION_SETTINGS, WEBHOOKS_ALLOW_PRIVATE: 'true' });
  const db = openDatabase(config.databaseUrl, { poolSize: config.databasePoolSize });
  const receiver = await startWebhookReceiver(() => ({ status: 204 }));
  const refused = await startWebhookReceiver();
  await refused.close();
  // Its worker only runs when the third row starts it.
  const services = createServices({ config, db, logger: createLogger('silent'), options: { runOnNewWork: false, dispatchOnAccept: false } });
  try {
    const organization = async (name: string, urls: string[]) => {
      const org = await services.organizations.createOrganization({ name });
      const ids: string[] = [];
      for (const url of urls) ids.push((await services.webhooks.create(operatorActor(org.id), { url })).endpoint.id);
      return { id: org.id, endpointIds: ids };
    };
    const quiet = await organization('Quiet', [`${receiver.url}/quiet`]);
    await insertWebhookBacklog(db, { organizationId: quiet.id, endpointIds: quiet.endpointIds, events: 2 * (CLAIMS + CLAIM_WARMUP) });
    // Statistics as the daily maintenance job keeps them, before each measure.
    await dialectOf(db).optimize(db);
    await claimOneAtATime(db, CLAIM_WARMUP);
    const empty = await claimOneAtATime(db, CLAIMS);

    const busy = await organization('Busy', [`http://127.0.0.1:${refused.port}/a`, `http://127.0.0.1:${refused.port}/b`]);
    await insertWebhookBacklog(db, { organizationId: busy.id, endpointIds: busy.endpointIds, events: OTHERS_BACKLOG / busy.endpointIds.length });
    await dialectOf(db).optimize(db);
    await claimOneAtATime(db, CLAIM_WARMUP);
    const beside = await claimOneAtATime(db, CLAIMS);
    console.log(`${LABEL[kind]}: claim ${empty.msPerClaim.toFixed(2)} ms alone, ${beside.msPerClaim.toFixed(2)} ms beside ${OTHERS_BACKLOG} due deliveries`);

    // The worker as a server runs it: a fill every second, and a nudge on each new event.
    const third = await organization('Third', [`${receiver.url}/third`]);
    const fill = setInterval(() => services.webhookWorker.fill(), 1000);
    services.webhookWorker.fill();
    const waits: number[] = [];
    try {
      await new Promise((resolve) => setTimeout(resolve, 2000));
      for (let i = 0; i < TEST_EVENTS; i++) {
        const before = receiver.received.length;
        const sent = Date.now();
        await services.webhooks.sendTest(operatorActor(third.id), third.endpointIds[0]!);
        await receiver.waitFor(before + 1, 30_000);
        waits.push(Date.now() - sent);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    } finally {
      clearInterval(fill);
    }
    const sorted = [...waits].sort((a, b) => a - b);
    console.log(`${LABEL[kind]}: test events under the backlog arrived in ${sorted.join(', ')} ms`);
    return {
      empty: empty.msPerClaim,
      beside: beside.msPerClaim,
      quietShare: beside.served.filter((id) => id === quiet.id).length / beside.served.length,
      testEvent: { p50: sorted[Math.floor(sorted.length / 2)]!, max: sorted.at(-1)! },
    };
  } finally {
    await services.stop();
    await db.destroy();
    await receiver.close();
    await p.install.drop();
  }
}
