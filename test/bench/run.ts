/**
 * `npm run bench`: measures the API against a bare Express app in the same run, and the
 * dispatcher's throughput and latency, then writes docs/benchmarks.md.
 * Servers run in their own processes; autocannon runs here, on loopback only.
 */
import fs from 'node:fs';
import os from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import autocannon, { type Result } from 'autocannon';
import { openDatabase, type Db } from '../../src/db/knex.js';
import { createLogger } from '../../src/logger.js';
import { createDispatcher } from '../../src/requests/dispatcher.js';
import { newRequestId } from '../../src/lib/ids.js';
import { provision } from '../helpers/provision.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CONNECTIONS = 50;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);

interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  ratio?: number;
}

function start(command: string[], env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, command, { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      const match = /"url":"(http:\/\/[^"]+)"/.exec(out);
      if (match) resolve({ child, url: match[1]! });
    });
    child.once('exit', (code) => reject(new Error(`${command.join(' ')} exited with ${code}`)));
  });
}

/** Starts a server that logs nothing at its level: on a free port, ready once /healthz answers. */
async function startQuiet(command: string[], env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const port = await new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
  const child = spawn(process.execPath, command, { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env, PORT: String(port) }, stdio: 'inherit' });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) break;
    const up = await fetch(`${url}/healthz`).then((r) => r.ok, () => false);
    if (up) return { child, url };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill();
  throw new Error(`${command.join(' ')} did not come up`);
}

async function load(name: string, options: autocannon.Options): Promise<Row> {
  const result: Result = await autocannon({ connections: CONNECTIONS, duration: DURATION_S, ...options });
  const non2xx = result.non2xx + result.errors + result.timeouts;
  if (non2xx > 0) throw new Error(`${name}: ${non2xx} responses were errors or not 2xx`);
  const row = { name, rps: Math.round(result.requests.average), p50: result.latency.p50, p99: result.latency.p99 };
  console.log(`${name.padEnd(28)} ${String(row.rps).padStart(7)} req/s  p50 ${row.p50} ms  p99 ${row.p99} ms`);
  return row;
}

/** A data dir with an org, key and scribe `bench`, and 200 receipts for list and poll to read. */
async function provisionBench(dataDir: string) {
  const { services, key, scribe, organizationId, close } = await provision(dataDir, 'bench');
  for (let i = 0; i < 200; i++) await services.requests.submit(scribe, { task: { summary: `seed ${i}` } });
  const pollId = (await services.requests.list(scribe, { limit: 1 })).requests[0]!.id;
  await close();
  return { key, pollId, organizationId, scribeId: scribe.id };
}

/** Inserts `n` accepted receipts directly, as a burst of submits would leave them. */
async function insertAccepted(db: Db, organizationId: string, scribeId: string, n: number): Promise<void> {
  const now = new Date();
  const at = now.toISOString();
  const rows = Array.from({ length: n }, (_, i) => ({
    id: newRequestId(now), organization_id: organizationId, scribe_id: scribeId, status: 'accepted', entity_type: 'task',
    title: `t${i}`, summary: `bulk ${i}`, available_at: at, attempts: 0, created_at: at, updated_at: at,
  }));
  for (let i = 0; i < rows.length; i += 500) await db('requests').insert(rows.slice(i, i + 500));
}

async function dispatcherThroughput(dataDir: string, organizationId: string, scribeId: string, n: number) {
  const db = openDatabase(path.join(dataDir, 'scribe.sqlite'));
  await insertAccepted(db, organizationId, scribeId, n);
  const dispatcher = createDispatcher({ db, clock: () => new Date(), logger: createLogger('silent') });
  const started = process.hrtime.bigint();
  const result = await dispatcher.tick();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const left = await db('requests').whereIn('status', ['accepted', 'dispatched']).count({ n: '*' }).first();
  await db.destroy();
  if (result.fulfilled !== n || Number(left!.n) !== 0) throw new Error(`drained ${result.fulfilled} of ${n}`);
  return { n, seconds, perSecond: Math.round(n / seconds) };
}

/** Sequential submits to an idle server; latency from the receipt's own created_at to completed_at. */
async function idleDispatchLatency(url: string, key: string, dataDir: string, samples: number) {
  const ids: string[] = [];
  for (let i = 0; i < samples; i++) {
    const res = await fetch(`${url}/api/v1/scribes/bench/requests`, {
      method: 'POST',
      headers: { 'X-Api-Key': key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ task: { summary: `latency ${i}` } }),
    });
    ids.push(((await res.json()) as { request: { id: string } }).request.id);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await new Promise((resolve) => setTimeout(resolve, 500));
  const db = openDatabase(path.join(dataDir, 'scribe.sqlite'));
  const rows = await db('requests').whereIn('id', ids).select('status', 'created_at', 'completed_at');
  await db.destroy();
  const latencies = rows.filter((r) => r.status === 'fulfilled').map((r) => Date.parse(r.completed_at) - Date.parse(r.created_at)).sort((a, b) => a - b);
  if (latencies.length !== samples) throw new Error(`only ${latencies.length} of ${samples} fulfilled`);
  return { samples, p50: latencies[Math.floor(samples / 2)]!, p99: latencies[Math.floor(samples * 0.99)]!, max: latencies.at(-1)! };
}

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribe-bench-'));
  const { key, pollId, organizationId, scribeId } = await provisionBench(dataDir);
  const rows: Row[] = [];

  const bare = await start(['--import', 'tsx', 'test/bench/bare-express.ts'], {});
  const baseline = await load('bare Express {"ok":true}', { url: `${bare.url}/` });
  bare.child.kill('SIGTERM');
  rows.push(baseline);

  const server = await startQuiet(['dist/src/main.js'], { DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
  const headers = { 'x-api-key': key, 'content-type': 'application/json' };
  let latency: Awaited<ReturnType<typeof idleDispatchLatency>>;
  try {
    rows.push(await load('POST submit (no attachments)', { url: `${server.url}/api/v1/scribes/bench/requests`, method: 'POST', headers, body: JSON.stringify({ task: { summary: 'Benchmark task' } }) }));
    rows.push(await load('GET poll', { url: `${server.url}/api/v1/requests/${pollId}`, headers }));
    rows.push(await load('GET list (25 per page)', { url: `${server.url}/api/v1/scribes/bench/requests`, headers }));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    latency = await idleDispatchLatency(server.url, key, dataDir, 200);
  } finally {
    server.child.kill('SIGTERM');
  }
  await new Promise((resolve) => server.child.once('exit', resolve));
  for (const row of rows.slice(1)) row.ratio = row.rps / baseline.rps;

  const drain = await dispatcherThroughput(dataDir, organizationId, scribeId, 10_000);
  console.log(`dispatcher: ${drain.n} receipts in ${drain.seconds.toFixed(2)} s = ${drain.perSecond}/s`);
  console.log(`202 → fulfilled when idle: p50 ${latency.p50} ms, p99 ${latency.p99} ms (${latency.samples} samples)`);

  writeReport(rows, drain, latency);
  fs.rmSync(dataDir, { recursive: true, force: true });
}

function writeReport(rows: Row[], drain: Awaited<ReturnType<typeof dispatcherThroughput>>, latency: Awaited<ReturnType<typeof idleDispatchLatency>>) {
  const pct = (r?: number) => (r === undefined ? '100 % (baseline)' : `${Math.round(r * 100)} %`);
  const lines = [
    '# Benchmarks',
    '',
    'Produced by `npm run bench` (test/bench/run.ts); rewritten on every run. One run on the',
    `development machine: ${os.cpus().length} cores, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}.`,
    `autocannon with ${CONNECTIONS} connections for ${DURATION_S} s per row, on loopback; the server runs in its own`,
    'process from `dist/` with `LOG_LEVEL=warn`. Absolute numbers vary between machines and runs;',
    'the ratio to bare Express, measured in the same run, is the figure to compare.',
    '',
    '## API',
    '',
    '| scenario | req/s | p50 ms | p99 ms | of bare Express |',
    '|---|---:|---:|---:|---:|',
    ...rows.map((r) => `| ${r.name} | ${r.rps} | ${r.p50} | ${r.p99} | ${pct(r.ratio)} |`),
    '',
    'Targets (issue 2): submit ≥ 50 %, poll ≥ 70 %, list ≥ 50 % of bare Express, p99 < 25 ms.',
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
    'Where the time goes, and what was changed to get here: [performance.md](performance.md).',
    '',
  ];
  fs.mkdirSync(path.join(ROOT, 'docs'), { recursive: true });
  fs.writeFileSync(path.join(ROOT, 'docs/benchmarks.md'), lines.join('\n'));
}

await main();
