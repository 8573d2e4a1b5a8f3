/**
 * Issue 13: the same API and entry-read rows on SQLite and on PostgreSQL, with one and two
 * server processes (WEB_CONCURRENCY); 202 → fulfilled when a web process takes the receipt
 * and a separate worker process works it; a backlog drained by one and by two worker
 * processes, counted per receipt.
 */
import path from 'node:path';
import { openDatabase, type Db } from '../../src/db/knex.js';
import { databaseKindOf, type DatabaseKind } from '../../src/db/dialect.js';
import { startPostgresCluster } from '../helpers/postgres-cluster.js';
import { PRODUCTION_SETTINGS, idleDispatchLatency, insertAccepted } from './api.js';
import { prepareEntries } from './entries.js';
import { CONNECTIONS, LOAD_LINE, load, machineLine, startServer, startWorker, workLeft, writeSection, type Row } from './lib.js';

const KINDS: DatabaseKind[] = ['sqlite', 'postgres'];
const LABEL: Record<DatabaseKind, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };
const PROCESSES = [1, 2];
const BACKLOG = 10_000;
const LATENCY_SAMPLES = 200;
const ENTRY_ROWS = ['first page', 'selective field filter', 'general text', 'combined && / ||'];

/** One install per database: the entries bench's contacts, and 200 receipts for poll and list. */
async function prepare(dir: string, kind: DatabaseKind, entries: number) {
  const p = await prepareEntries(dir, entries, kind);
  for (let i = 0; i < 200; i++) await p.services.requests.submit(p.scribe, { task: { summary: `seed ${i}` } });
  const pollId = (await p.services.requests.list(p.scribe, { limit: 1 })).requests[0]!.id;
  const clientKeys: string[] = [];
  for (let i = 0; i < CONNECTIONS; i++) clientKeys.push((await p.services.organizations.createApiKey({ organizationId: p.contacts.organization_id, name: `client ${i}` })).key);
  await p.close();
  return {
    env: { ...p.install.env, ...PRODUCTION_SETTINGS },
    databaseUrl: p.install.databaseUrl,
    key: p.key,
    clientKeys,
    pollId,
    organizationId: p.contacts.organization_id,
    scribeId: p.scribe.id,
    entryScenarios: p.scenarios.filter((s) => ENTRY_ROWS.includes(s.name)),
    typeId: p.contacts.id,
  };
}
type Install = Awaited<ReturnType<typeof prepare>>;

async function measure(install: Install, processes: number): Promise<Row[]> {
  const server = await startServer(['dist/main.js'], { ...install.env, WEB_CONCURRENCY: String(processes) }, '/healthz', { quiet: true });
  // /healthz answers once the first process listens; give the others time to start too.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const api = `${server.url}/api/v1`;
  const headers = { 'x-api-key': install.key, 'content-type': 'application/json' };
  const rows: Row[] = [];
  try {
    rows.push(await load('POST submit', { url: `${api}/scribes/bench/requests`, method: 'POST', headers, body: JSON.stringify({ task: { summary: 'Benchmark task' } }) }));
    // The next rows measure reads on an idle server, not beside the submits' leftover tasks.
    await untilQueueEmpty(install.databaseUrl);
    rows.push(await load('GET poll', { url: `${api}/requests/${install.pollId}`, headers }));
    // The same with a key per connection: calls that share a key also share its lookups (see performance.md).
    let client = 0;
    rows.push(
      await load(`GET poll, a key per connection`, {
        url: `${api}/requests/${install.pollId}`,
        headers,
        setupClient: (c) => c.setHeaders({ ...headers, 'x-api-key': install.clientKeys[client++ % install.clientKeys.length]! }),
      }),
    );
    rows.push(await load('GET list (25 per page)', { url: `${api}/scribes/bench/requests`, headers }));
    for (const s of install.entryScenarios) {
      const query = s.q ? `?q=${encodeURIComponent(s.q)}` : '';
      rows.push(await load(`entries: ${s.name}`, { url: `${api}/entry_types/${install.typeId}/entries${query}`, headers }));
    }
  } finally {
    await server.stop();
  }
  return rows;
}

/** Resolves once no receipt waits for dispatch and no task for the agent (`workLeft`). */
async function queueEmpty(db: Db): Promise<void> {
  while (await workLeft(db)) await new Promise((resolve) => setTimeout(resolve, 200));
}

async function untilQueueEmpty(databaseUrl: string): Promise<void> {
  const db = openDatabase(databaseUrl);
  await queueEmpty(db).finally(() => db.destroy());
}

/** VACUUM ANALYZE on PostgreSQL: what autovacuum does within a minute or two of the load ending. */
async function settle(databaseUrl: string): Promise<void> {
  if (databaseKindOf(databaseUrl) !== 'postgres') return;
  const db = openDatabase(databaseUrl);
  await db.raw('vacuum analyze').finally(() => db.destroy());
}

/** Sequential submits to a web-only process while a worker-only process works them. */
async function latencyAcrossProcesses(install: Install) {
  const worker = await startWorker(install.env);
  const web = await startServer(['dist/main.js'], { ...install.env, PROCESS_ROLE: 'web' }, '/healthz', { quiet: true });
  try {
    // Idle: the worker first finishes what the load rows left (their submits' tasks), and on
    // PostgreSQL the queues' dead rows are vacuumed, as autovacuum does on an idle server.
    await untilQueueEmpty(install.databaseUrl);
    await settle(install.databaseUrl);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    return await idleDispatchLatency(web.url, install.key, install.databaseUrl, LATENCY_SAMPLES);
  } finally {
    await web.stop();
    await worker.stop();
  }
}

/** `BACKLOG` accepted receipts worked to done by `workers` worker processes; each receipt must end with exactly one task. */
async function drain(install: Install, workers: number) {
  const db = openDatabase(install.databaseUrl);
  try {
    // From an empty queue: nothing left over from the load rows or the previous drain.
    await db('tasks').del();
    await db('requests').del();
    const started = await Promise.all(Array.from({ length: workers }, () => startWorker(install.env)));
    const from = process.hrtime.bigint();
    await insertAccepted(db, install.organizationId, install.scribeId, BACKLOG);
    await queueEmpty(db);
    const seconds = Number(process.hrtime.bigint() - from) / 1e9;
    await Promise.all(started.map((w) => w.stop()));
    const notOnce = await db('requests as r').leftJoin('tasks as t', 't.request_id', 'r.id').groupBy('r.id').havingRaw('count(t.id) <> 1').select('r.id');
    if (notOnce.length > 0) throw new Error(`${workers} workers: ${notOnce.length} receipts without exactly one task`);
    return { workers, seconds, perSecond: Math.round(BACKLOG / seconds) };
  } finally {
    await db.destroy();
  }
}

export async function benchScale(dataDir: string, entries: number): Promise<void> {
  const cluster = await startPostgresCluster({ durable: true });
  // The test helpers create PostgreSQL databases on the server named here.
  process.env.TEST_POSTGRES_URL = cluster.url;
  const table = new Map<string, Map<string, Row>>();
  const latencies = new Map<DatabaseKind, Awaited<ReturnType<typeof latencyAcrossProcesses>>>();
  const drains = new Map<string, Awaited<ReturnType<typeof drain>>>();
  try {
    for (const kind of KINDS) {
      console.log(`--- ${LABEL[kind]}`);
      const install = await prepare(path.join(dataDir, kind), kind, entries);
      for (const processes of PROCESSES) {
        console.log(`${LABEL[kind]}, ${processes} process(es)`);
        for (const row of await measure(install, processes)) {
          if (!table.has(row.name)) table.set(row.name, new Map());
          table.get(row.name)!.set(`${kind}×${processes}`, row);
        }
      }
      const latency = await latencyAcrossProcesses(install);
      console.log(`${LABEL[kind]}: 202 → fulfilled, web and worker processes: p50 ${latency.p50} ms, p99 ${latency.p99} ms`);
      latencies.set(kind, latency);
      for (const workers of PROCESSES) {
        const result = await drain(install, workers);
        console.log(`${LABEL[kind]}: ${BACKLOG} receipts worked by ${workers} worker process(es) in ${result.seconds.toFixed(2)} s`);
        drains.set(`${kind}×${workers}`, result);
      }
    }
  } finally {
    await cluster.stop();
  }

  const columns = KINDS.flatMap((kind) => PROCESSES.map((n) => ({ key: `${kind}×${n}`, title: `${LABEL[kind]}, ${n} process${n > 1 ? 'es' : ''}` })));
  const cell = (row?: Row) => (row ? `${row.rps} (p50 ${row.p50})${row.errors ? `, ${row.errors} errors` : ''}` : '');
  const ofSqlite = (name: string) => {
    const cells = table.get(name)!;
    return `${Math.round((cells.get('postgres×1')!.rps / cells.get('sqlite×1')!.rps) * 100)} %`;
  };
  writeSection('scale', [
    '## SQLite and PostgreSQL, one and two processes',
    '',
    `One run: ${machineLine()}; ${LOAD_LINE}; production settings (a log line per request, rate limits counted in the database on every call); ${entries.toLocaleString('en')} entries of one type.`,
    'PostgreSQL 15 runs on the same machine at its own defaults (fsync and synchronous commit on), in a cluster the bench starts;',
    'SQLite runs in WAL mode with `synchronous = NORMAL`. The load generator shares the 2 cores with the servers.',
    '',
    `| scenario | ${columns.map((c) => c.title).join(' | ')} | PostgreSQL of SQLite (1 process) |`,
    `|---|${columns.map(() => '---:').join('|')}|---:|`,
    ...[...table].map(([name, cells]) => `| ${name.replace(/\|/g, '\\|')} | ${columns.map((c) => cell(cells.get(c.key))).join(' | ')} | ${ofSqlite(name)} |`),
    '',
    "Cells: requests per second (p50 latency in ms). Target (issue 13): PostgreSQL at least 50 % of SQLite's throughput.",
    '',
    '| across processes | SQLite | PostgreSQL |',
    '|---|---:|---:|',
    `| 202 → fulfilled, submitted to a web process and worked by a worker process, idle, p50 (${LATENCY_SAMPLES} sequential submits) | ${latencies.get('sqlite')!.p50} ms | ${latencies.get('postgres')!.p50} ms |`,
    `| the same, p99 | ${latencies.get('sqlite')!.p99} ms | ${latencies.get('postgres')!.p99} ms |`,
    ...PROCESSES.map(
      (n) =>
        `| ${BACKLOG.toLocaleString('en')} accepted receipts dispatched and their tasks worked to done by ${n} worker process${n > 1 ? 'es' : ''} | ${drains.get(`sqlite×${n}`)!.perSecond.toLocaleString('en')} receipts/s | ${drains.get(`postgres×${n}`)!.perSecond.toLocaleString('en')} receipts/s |`,
    ),
    '',
    'Target (issue 13): 202 → fulfilled p50 under 10 ms across processes on PostgreSQL, where a',
    '`NOTIFY` wakes the worker; SQLite has no notifications, so a worker in another process finds',
    'the receipt by its one-second poll. Every drained receipt was checked to have exactly one task.',
  ]);
}
