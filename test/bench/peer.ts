/**
 * Scribe's queues beside a well-known PostgreSQL job queue, graphile-worker, on one
 * throwaway cluster in one run: the peer's no-op jobs per second in its default mode
 * (concurrency 10) against Scribe's receipts dispatched to tasks per second, the peer's
 * add → start against Scribe's 202 → fulfilled, and Scribe's dispatch once 100,000
 * finished receipts lie in the table (a claim must not walk them).
 */
import path from 'node:path';
import { makeWorkerUtils, run, Logger, type Runner } from 'graphile-worker';
import { openDatabase, type Db } from '../../src/db/knex.js';
import { dialectOf, type DatabaseKind } from '../../src/db/dialect.js';
import { insertRows } from '../../src/db/rows.js';
import { newRequestId } from '../../src/lib/ids.js';
import { startPostgresCluster } from '../helpers/postgres-cluster.js';
import { createTestDatabase } from '../helpers/databases.js';
import { dispatcherThroughput, idleDispatchLatency, percentiles, provisionBench, runtimeThroughput } from './api.js';
import { newId } from '../../src/lib/ids.js';
import { machineLine, startServer, writeSection } from './lib.js';

const JOBS = 10_000;
const LATENCY_SAMPLES = 200;
const FINISHED = 100_000;
const PEER_CONCURRENCY = 10;
const quiet = new Logger(() => () => {});

/** graphile-worker draining `JOBS` no-op jobs added in one call; jobs per second. */
async function peerThroughput(connectionString: string): Promise<number> {
  const utils = await makeWorkerUtils({ connectionString, logger: quiet });
  let done = 0;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  try {
    await utils.migrate();
    await utils.addJobs(Array.from({ length: JOBS }, (_, i) => ({ identifier: 'noop', payload: { i } })));
    const started = process.hrtime.bigint();
    const runner: Runner = await run({
      connectionString,
      concurrency: PEER_CONCURRENCY,
      noHandleSignals: true,
      logger: quiet,
      taskList: { noop: async () => void (++done === JOBS && finish()) },
    });
    await finished;
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    await runner.stop();
    return Math.round(JOBS / seconds);
  } finally {
    await utils.release();
  }
}

/** graphile-worker's add → start on an idle worker: `LATENCY_SAMPLES` jobs added one after another, 20 ms apart. */
async function peerLatency(connectionString: string) {
  const utils = await makeWorkerUtils({ connectionString, logger: quiet });
  const waiting = new Map<number, (startedAt: number) => void>();
  const runner = await run({
    connectionString,
    concurrency: PEER_CONCURRENCY,
    noHandleSignals: true,
    logger: quiet,
    taskList: { noop: async (payload) => waiting.get((payload as { i: number }).i)?.(performance.now()) },
  });
  const latencies: number[] = [];
  try {
    for (let i = 0; i < LATENCY_SAMPLES; i++) {
      const started = new Promise<number>((resolve) => waiting.set(i, resolve));
      const added = performance.now();
      await utils.addJob('noop', { i });
      latencies.push((await started) - added);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await runner.stop();
    await utils.release();
  }
  return percentiles(latencies, LATENCY_SAMPLES);
}

/** `n` receipts as the dispatcher leaves them fulfilled, and their tasks done, inserted in bulk. */
async function insertFinished(db: Db, organizationId: string, scribeId: string, n: number): Promise<void> {
  const at = new Date(Date.now() - 86_400_000).toISOString();
  for (let i = 0; i < n; i += 1000) {
    const receipts = Array.from({ length: Math.min(1000, n - i) }, (_, j) => ({
      id: newRequestId(new Date(at)),
      organization_id: organizationId,
      scribe_id: scribeId,
      status: 'fulfilled',
      entity_type: 'task',
      title: `old ${i + j}`,
      summary: `old ${i + j}`,
      available_at: at,
      attempts: 1,
      created_at: at,
      updated_at: at,
      completed_at: at,
    }));
    await insertRows(db, 'requests', receipts);
    const tasks = receipts.map((r) => ({
      id: newId(),
      organization_id: organizationId,
      scribe_id: scribeId,
      request_id: r.id,
      status: 'done',
      title: r.title,
      summary: r.summary,
      result: 'Done',
      created_at: at,
      updated_at: at,
    }));
    await insertRows(db, 'tasks', tasks);
  }
  // As the product would find them: PostgreSQL vacuumed after a drain, and each database's statistics as it keeps them.
  await dialectOf(db).tidyAfterDrain(db, ['requests', 'tasks']);
  await dialectOf(db).optimize(db);
}

/**
 * Receipts dispatched to tasks and tasks worked to done (by the builtin agent) per second,
 * fresh and again once `FINISHED` finished receipts and done tasks lie in the tables.
 */
async function agedQueues(dataDir: string, kind: DatabaseKind) {
  const install = await provisionBench(path.join(dataDir, `aged-${kind}`), kind);
  const drain = async () => ({
    dispatch: await dispatcherThroughput(install.install.databaseUrl, install.organizationId, install.scribeId, JOBS),
    work: await runtimeThroughput(install.install.env, JOBS),
  });
  const fresh = await drain();
  const db = openDatabase(install.install.databaseUrl);
  await insertFinished(db, install.organizationId, install.scribeId, FINISHED).finally(() => db.destroy());
  const aged = await drain();
  console.log(
    `Scribe on ${kind}: ${fresh.dispatch.perSecond} receipts/s, ${fresh.work.perSecond} tasks/s; after ${FINISHED} finished: ${aged.dispatch.perSecond} receipts/s, ${aged.work.perSecond} tasks/s`,
  );
  return { fresh, aged };
}

export async function benchPeer(dataDir: string): Promise<void> {
  const cluster = await startPostgresCluster({ durable: true });
  process.env.TEST_POSTGRES_URL = cluster.url;
  try {
    const peerUrl = await createTestDatabase(path.join(dataDir, 'peer'), { kind: 'postgres', migrated: false });
    const peer = { perSecond: await peerThroughput(peerUrl), latency: await peerLatency(peerUrl) };
    console.log(`graphile-worker: ${peer.perSecond} jobs/s; add → start p50 ${peer.latency.p50.toFixed(1)} ms`);

    const { fresh, aged } = await agedQueues(dataDir, 'postgres');
    const sqlite = await agedQueues(dataDir, 'sqlite');
    const install = await provisionBench(path.join(dataDir, 'scribe'), 'postgres');
    const server = await startServer(['dist/main.js'], { ...install.install.env, LOG_LEVEL: 'warn' }, '/healthz', { quiet: true });
    let latency: Awaited<ReturnType<typeof idleDispatchLatency>>;
    try {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      latency = await idleDispatchLatency(server.url, install.key, install.install.databaseUrl, LATENCY_SAMPLES);
    } finally {
      await server.stop();
    }
    console.log(`Scribe: 202 → fulfilled p50 ${latency.p50} ms`);

    const pct = (a: number, b: number) => `${Math.round((a / b) * 100)} %`;
    writeSection('peer', [
      '## Beside a peer: graphile-worker on the same PostgreSQL',
      '',
      `One run: ${machineLine()}; one throwaway PostgreSQL cluster (fsync and synchronous commit on) for both; graphile-worker 0.17.3`,
      `in its default mode at concurrency ${PEER_CONCURRENCY}, running a no-op job, in the bench's process; Scribe's dispatcher in the bench's process too.`,
      '',
      '| measure | graphile-worker | Scribe | Scribe of peer |',
      '|---|---:|---:|---:|',
      `| ${JOBS.toLocaleString('en')} queued items worked, per second (jobs; receipts dispatched to tasks) | ${peer.perSecond.toLocaleString('en')} | ${fresh.dispatch.perSecond.toLocaleString('en')} | ${pct(fresh.dispatch.perSecond, peer.perSecond)} |`,
      `| the same after ${FINISHED.toLocaleString('en')} finished receipts | | ${aged.dispatch.perSecond.toLocaleString('en')} | ${pct(aged.dispatch.perSecond, fresh.dispatch.perSecond)} of fresh |`,
      `| the ${JOBS.toLocaleString('en')} tasks worked to done by the builtin agent, per second (one process) | | ${fresh.work.perSecond.toLocaleString('en')} | |`,
      `| the same after ${FINISHED.toLocaleString('en')} done tasks (claims must not walk them) | | ${aged.work.perSecond.toLocaleString('en')} | ${pct(aged.work.perSecond, fresh.work.perSecond)} of fresh |`,
      `| idle: add → start (peer), 202 → fulfilled (Scribe), p50 of ${LATENCY_SAMPLES} | ${peer.latency.p50.toFixed(1)} ms | ${latency.p50} ms | ${(latency.p50 / peer.latency.p50).toFixed(2)}× |`,
      '',
      'Targets: receipts → tasks at ≥ 50 % of the peer; 202 → fulfilled p50 within 1.5× of its add → start; the aged rows',
      "level with the fresh ones. A receipt does more than a no-op job: its task, the task's history row and the receipt's",
      'end are written in one transaction with its event.',
      '',
      `The aged rows on SQLite (a file of its own, same process, same ${FINISHED.toLocaleString('en')} finished items):`,
      '',
      '| per second | fresh | aged | aged of fresh |',
      '|---|---:|---:|---:|',
      `| receipts dispatched to tasks | ${sqlite.fresh.dispatch.perSecond.toLocaleString('en')} | ${sqlite.aged.dispatch.perSecond.toLocaleString('en')} | ${pct(sqlite.aged.dispatch.perSecond, sqlite.fresh.dispatch.perSecond)} |`,
      `| tasks worked to done by the builtin agent | ${sqlite.fresh.work.perSecond.toLocaleString('en')} | ${sqlite.aged.work.perSecond.toLocaleString('en')} | ${pct(sqlite.aged.work.perSecond, sqlite.fresh.work.perSecond)} |`,
    ]);
  } finally {
    await cluster.stop();
  }
}
