/** The task-dispatch API against bare Express, the dispatcher's and the agent runtime's throughput and latency. */
import { loadConfig } from '../../src/config.js';
import { createTaskService } from '../../src/tasks/service.js';
import { createAuditLog } from '../../src/audit/service.js';
import { openDatabase, type Db } from '../../src/db/knex.js';
import { createLogger } from '../../src/logger.js';
import { createServices } from '../../src/services.js';
import { createDispatcher } from '../../src/requests/queue.js';
import { newRequestId } from '../../src/lib/ids.js';
import type { DatabaseKind } from '../../src/db/dialect.js';
import { provision } from '../helpers/provision.js';
import { LOAD_LINE, load, machineLine, startServer, writeSection, type Row } from './lib.js';

/**
 * As in production: a log line per request (to /dev/null here), metrics, rate limiting on
 * (with a limit this load never reaches, so every call pays for the check).
 */
export const PRODUCTION_SETTINGS = { LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '1000000000' };

/** A data dir with an org, key and scribe `bench`, and 200 receipts for list and poll to read. */
export async function provisionBench(dataDir: string, kind?: DatabaseKind) {
  const { services, key, scribe, organizationId, install, close } = await provision(dataDir, 'bench', { kind });
  for (let i = 0; i < 200; i++) await services.requests.submit(scribe, { task: { summary: `seed ${i}` } });
  const pollId = (await services.requests.list(scribe, { limit: 1 })).requests[0]!.id;
  await close();
  return { key, pollId, organizationId, scribeId: scribe.id, install };
}

/** Inserts `n` accepted receipts directly, as a burst of submits would leave them. */
export async function insertAccepted(db: Db, organizationId: string, scribeId: string, n: number): Promise<void> {
  const now = new Date();
  const at = now.toISOString();
  const rows = Array.from({ length: n }, (_, i) => ({
    id: newRequestId(now),
    organization_id: organizationId,
    scribe_id: scribeId,
    status: 'accepted',
    entity_type: 'task',
    title: `t${i}`,
    summary: `bulk ${i}`,
    available_at: at,
    attempts: 0,
    created_at: at,
    updated_at: at,
  }));
  for (let i = 0; i < rows.length; i += 500) await db('requests').insert(rows.slice(i, i + 500));
}

export async function dispatcherThroughput(databaseUrl: string, organizationId: string, scribeId: string, n: number) {
  const db = openDatabase(databaseUrl);
  // Receipts already waiting (a provisioned install's seed) are drained with the others and counted.
  const waiting = Number((await db('requests').where({ status: 'accepted' }).count({ n: '*' }).first())!.n);
  await insertAccepted(db, organizationId, scribeId, n);
  n += waiting;
  const clock = () => new Date();
  const tasks = createTaskService({ db, clock, audit: createAuditLog({ db, clock }) });
  const dispatcher = createDispatcher({ db, clock, logger: createLogger('silent'), createTasks: tasks.createForReceipts });
  const started = process.hrtime.bigint();
  const result = await dispatcher.tick();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const left = await db('requests').whereIn('status', ['accepted', 'dispatched']).count({ n: '*' }).first();
  await db.destroy();
  if (result.fulfilled !== n || Number(left!.n) !== 0) throw new Error(`drained ${result.fulfilled} of ${n}`);
  return { n, seconds, perSecond: Math.round(n / seconds) };
}

/** `samples` POSTs one after another, 20 ms apart, to an idle server; returns what `idOf` picks from each answer. */
async function sequentialPosts(url: string, key: string, bodyOf: (i: number) => object, idOf: (body: never) => string, samples: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < samples; i++) {
    const res = await fetch(url, { method: 'POST', headers: { 'X-Api-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify(bodyOf(i)) });
    ids.push(idOf((await res.json()) as never));
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  // Let the last ones finish.
  await new Promise((resolve) => setTimeout(resolve, 500));
  return ids;
}

export function percentiles(latencies: number[], samples: number) {
  if (latencies.length !== samples) throw new Error(`only ${latencies.length} of ${samples} finished`);
  const sorted = [...latencies].sort((a, b) => a - b);
  return { samples, p50: sorted[Math.floor(samples / 2)]!, p99: sorted[Math.floor(samples * 0.99)]! };
}

/** The builtin agent working the open tasks the dispatcher left (one process, default concurrency). */
export async function runtimeThroughput(env: Record<string, string>, expected: number) {
  const config = loadConfig(env);
  const db = openDatabase(config.databaseUrl, { poolSize: config.databasePoolSize });
  const services = createServices({ config, db, logger: createLogger('silent'), options: { runOnNewWork: false } });
  const started = process.hrtime.bigint();
  const result = await services.runtime.tick();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await services.stop();
  await db.destroy();
  if (result.tasks < expected) throw new Error(`worked ${result.tasks} of ${expected} tasks`);
  return { n: result.tasks, seconds, perSecond: Math.round(result.tasks / seconds) };
}

/** Sequential chat messages to an idle server; latency from the session's created_at to the scribe's reply. */
async function idleChatLatency(url: string, key: string, databaseUrl: string, samples: number) {
  const bodyOf = (i: number) => ({ message: i % 2 ? 'What are you working on?' : `Anything about item ${i}?` });
  const ids = await sequentialPosts(`${url}/api/v1/scribes/bench/chat`, key, bodyOf, (b: { session_id: string }) => b.session_id, samples);
  const db = openDatabase(databaseUrl);
  const rows = await db('sessions as s')
    .join('session_messages as m', 'm.session_id', 's.id')
    .whereIn('s.id', ids)
    .where('m.author', 'scribe')
    .select('s.created_at', 'm.created_at as replied_at');
  await db.destroy();
  return percentiles(
    rows.map((r) => Date.parse(r.replied_at) - Date.parse(r.created_at)),
    samples,
  );
}

/** Sequential submits to an idle server; latency from the receipt's own created_at to completed_at. */
export async function idleDispatchLatency(url: string, key: string, databaseUrl: string, samples: number) {
  const bodyOf = (i: number) => ({ task: { summary: `latency ${i}` } });
  const ids = await sequentialPosts(`${url}/api/v1/scribes/bench/requests`, key, bodyOf, (b: { request: { id: string } }) => b.request.id, samples);
  const db = openDatabase(databaseUrl);
  // A worker in another process on SQLite finds receipts by polling, so the last may still be on its way.
  let rows: Array<{ created_at: string; completed_at: string }> = [];
  for (let waited = 0; waited <= 10_000; waited += 100) {
    rows = await db('requests').whereIn('id', ids).where({ status: 'fulfilled' }).select('created_at', 'completed_at');
    if (rows.length === samples) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await db.destroy();
  return percentiles(
    rows.map((r) => Date.parse(r.completed_at) - Date.parse(r.created_at)),
    samples,
  );
}

export async function benchApi(dataDir: string): Promise<void> {
  const { key, pollId, organizationId, scribeId, install } = await provisionBench(dataDir, 'sqlite');
  const rows: Row[] = [];

  const bare = await startServer(['--import', 'tsx', 'test/bench/bare-express.ts'], {}, '/');
  const baseline = await load('bare Express {"ok":true}', { url: `${bare.url}/` });
  await bare.stop();
  rows.push(baseline);

  const server = await startServer(['dist/main.js'], { ...install.env, ...PRODUCTION_SETTINGS }, '/healthz', { quiet: true });
  const headers = { 'x-api-key': key, 'content-type': 'application/json' };
  let latency: Awaited<ReturnType<typeof idleDispatchLatency>>;
  let chatLatency: Awaited<ReturnType<typeof idleChatLatency>>;
  try {
    rows.push(
      await load('POST submit (no attachments)', {
        url: `${server.url}/api/v1/scribes/bench/requests`,
        method: 'POST',
        headers,
        body: JSON.stringify({ task: { summary: 'Benchmark task' } }),
      }),
    );
    let n = 0;
    rows.push(
      await load('POST submit with Idempotency-Key', {
        url: `${server.url}/api/v1/scribes/bench/requests`,
        requests: [
          {
            method: 'POST',
            headers,
            body: JSON.stringify({ task: { summary: 'Benchmark task' } }),
            setupRequest: (req) => ({ ...req, headers: { ...req.headers, 'idempotency-key': `bench-${process.pid}-${n++}` } }),
          },
        ],
      }),
    );
    rows.push(await load('GET poll', { url: `${server.url}/api/v1/requests/${pollId}`, headers: { 'x-api-key': key } }));
    rows.push(await load('GET list (25 per page)', { url: `${server.url}/api/v1/scribes/bench/requests`, headers: { 'x-api-key': key } }));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    latency = await idleDispatchLatency(server.url, key, install.databaseUrl, 200);
    chatLatency = await idleChatLatency(server.url, key, install.databaseUrl, 200);
  } finally {
    await server.stop();
  }
  for (const row of rows.slice(1)) row.ratio = row.rps / baseline.rps;

  const drain = await dispatcherThroughput(install.databaseUrl, organizationId, scribeId, 10_000);
  console.log(`dispatcher: ${drain.n} receipts in ${drain.seconds.toFixed(2)} s = ${drain.perSecond}/s`);
  console.log(`202 → fulfilled when idle: p50 ${latency.p50} ms, p99 ${latency.p99} ms (${latency.samples} samples)`);
  const worked = await runtimeThroughput(install.env, drain.n);
  console.log(`agent runtime: ${worked.n} tasks in ${worked.seconds.toFixed(2)} s = ${worked.perSecond}/s`);
  console.log(`chat 202 → reply when idle: p50 ${chatLatency.p50} ms, p99 ${chatLatency.p99} ms (${chatLatency.samples} samples)`);

  const pct = (r?: number) => (r === undefined ? '100 % (baseline)' : `${Math.round(r * 100)} %`);
  writeSection('api', [
    '## Task-dispatch API',
    '',
    `One run: ${machineLine()}; ${LOAD_LINE}.`,
    '',
    '| scenario | req/s | p50 ms | p99 ms | of bare Express | errors |',
    '|---|---:|---:|---:|---:|---:|',
    ...rows.map((r) => `| ${r.name} | ${r.rps} | ${r.p50} | ${r.p99} | ${pct(r.ratio)} | ${r.errors} |`),
    '',
    'Targets (issue 2): submit ≥ 50 %, poll ≥ 70 %, list ≥ 50 % of bare Express, p99 < 25 ms.',
    'Each submitted receipt also becomes a task that the builtin agent works in the same',
    'process during the run (see the agent runtime below), as it would in production. The',
    'server runs as in production: a JSON log line per request (at `info`, to /dev/null),',
    'Prometheus metrics, and rate limiting checked on every call (with a limit this load never',
    'reaches). The Idempotency-Key row uses a new key per call (the first-request path).',
    '',
    '## Dispatcher',
    '',
    '| measure | value |',
    '|---|---:|',
    `| ${drain.n.toLocaleString('en')} accepted receipts drained to fulfilled | ${drain.seconds.toFixed(2)} s (${drain.perSecond.toLocaleString('en')} receipts/s) |`,
    `| 202 → fulfilled on an idle server, p50 (${latency.samples} sequential submits) | ${latency.p50} ms |`,
    `| 202 → fulfilled on an idle server, p99 | ${latency.p99} ms |`,
    '',
    'Targets: ≥ 5,000 receipts/s; median 202 → fulfilled under 50 ms when idle. Latency is',
    "read from each receipt's own `created_at` and `completed_at` (millisecond resolution).",
    '',
    '## Agent runtime',
    '',
    '| measure | value |',
    '|---|---:|',
    `| the ${worked.n.toLocaleString('en')} tasks above worked to done by the builtin agent (one process, AGENT_CONCURRENCY at its default of 100) | ${worked.seconds.toFixed(2)} s (${worked.perSecond.toLocaleString('en')} tasks/s) |`,
    `| chat 202 → the scribe's reply recorded, idle server, p50 (${chatLatency.samples} sequential messages) | ${chatLatency.p50} ms |`,
    `| chat 202 → reply, p99 | ${chatLatency.p99} ms |`,
    '',
    "The builtin agent stands in for a model here: the figures are the runtime's own cost",
    '(claims, transcript and history reads, entry lookups, recording the outcome).',
  ]);
}
