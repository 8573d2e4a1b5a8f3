/** Outbound webhooks: fulfilled receipt → webhook received on an idle server, and deliveries per second from a backlog. */
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/knex.js';
import { createLogger } from '../../src/logger.js';
import { createServices } from '../../src/services.js';
import { operatorActor } from '../../src/audit/service.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';
import { PRODUCTION_SETTINGS, percentiles, provisionBench } from './api.js';
import { machineLine, startServer, writeSection } from './lib.js';

const SAMPLES = 200;
const BACKLOG = 1_000;
const WARMUP = 20;

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
  const server = await startServer(['dist/src/main.js'], env, '/healthz', { quiet: true });
  const ids: string[] = [];
  try {
    // As the API bench does: a second to settle, and warm-up calls not counted (the first
    // deliveries of a new process wait for its first connections and compiled code).
    await new Promise((resolve) => setTimeout(resolve, 1000));
    for (let i = -WARMUP; i < SAMPLES; i++) {
      const res = await fetch(`${server.url}/api/v1/scribes/bench/requests`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify({ task: { summary: `hook ${i}` } }) });
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

  writeSection('webhooks', [
    '## Outbound webhooks',
    '',
    `One run: ${machineLine()}; SQLite; the receiver is a local Node HTTP server answering 204.`,
    '',
    '| measure | value |',
    '|---|---:|',
    `| fulfilled receipt → webhook received, idle server, p50 (${SAMPLES} sequential submits) | ${idle.p50} ms |`,
    `| fulfilled receipt → webhook received, p99 | ${idle.p99} ms |`,
    `| ${BACKLOG.toLocaleString('en')} queued deliveries sent by one process (8 at once) | ${seconds.toFixed(2)} s (${perSecond.toLocaleString('en')} deliveries/s) |`,
    '',
    "Target (issue 15): p50 under 20 ms. Latency runs from the receipt's `completed_at` (the",
    'transaction that wrote the event) to the moment the receiver read the POST, both on this',
    "machine's clock (millisecond resolution).",
  ]);
}
