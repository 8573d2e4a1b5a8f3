/**
 * The agent runtime against a model that answers every call in a second: 10,000 tasks over
 * 20 scribes drained by worker processes warmed up by 10,000 more each, each drain beside its limit
 * by Little's law (tasks × model calls × model time ÷ slots), the workers' CPU per model call
 * (and over their first 2,000), memory per run in flight, and how soon a scribe with no
 * backlog starts its first run meanwhile; and beside them, the floor: the same calls made by
 * the OpenAI SDK alone (sdk-alone.ts).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { openDatabase, type Db } from '../../src/db/knex.js';
import { newId, newRequestId } from '../../src/lib/ids.js';
import { bringRunTurnsForward } from '../../src/scribes/queries.js';
import type { DatabaseKind } from '../../src/db/dialect.js';
import { deadlocksOf } from '../helpers/databases.js';
import { startPostgresCluster } from '../helpers/postgres-cluster.js';
import { provision } from '../helpers/provision.js';
import { insertAccepted } from './api.js';
import { machineLine, startWorker, workLeft, writeSection } from './lib.js';
import { startBenchModel, type BenchModel } from './model.js';

/** BENCH_AGENT_TASKS: fewer for a quick look at the harness. */
const TASKS = Number(process.env.BENCH_AGENT_TASKS ?? 10_000);
const SCRIBES = 20;
/**
 * Tasks (or sessions) each fresh worker process works first, whose CPU is its cold figure:
 * V8 compiles the hot code of a process in its first seconds of work, a cost paid once per
 * process start and not per call. BENCH_AGENT_WARM_UP: another number.
 */
const WARM_UP = Number(process.env.BENCH_AGENT_WARM_UP ?? 2_000);
/**
 * Tasks each worker process then works unmeasured before the measured drain. After its first
 * 2,000, a process still spent a tenth of its CPU compiling over the next 10,000 (the more so
 * in each of two processes, each of which compiles the same code for half the calls); after
 * 10,000 it is warm as a worker that has run for a while is (docs/performance.md, "Warm
 * enough"). BENCH_AGENT_SETTLE: another number.
 */
const SETTLE = Number(process.env.BENCH_AGENT_SETTLE ?? 8_000);
const MODEL_MS = 1000;
/** How long after the first model call the newcomer's one task arrives: well inside the backlog. */
const NEWCOMER_AFTER_MS = 3000;
const CLOCK_TICKS = 100; // USER_HZ: /proc/<pid>/stat counts CPU time in these

interface Scenario {
  name: string;
  kind: DatabaseKind;
  processes: number;
  /** AGENT_CONCURRENCY of each process. */
  slots: number;
  toolRounds: number;
  /** What the backlog is: receipts that become tasks (unless set), or chat sessions each owed an answer. */
  work?: 'sessions';
}

const SCENARIOS: Scenario[] = [
  { name: 'SQLite, 1 process', kind: 'sqlite', processes: 1, slots: 1000, toolRounds: 0 },
  { name: 'PostgreSQL, 1 process', kind: 'postgres', processes: 1, slots: 1000, toolRounds: 0 },
  { name: 'PostgreSQL, 2 processes', kind: 'postgres', processes: 2, slots: 500, toolRounds: 0 },
  { name: 'SQLite, 1 process, 2 tool rounds', kind: 'sqlite', processes: 1, slots: 1000, toolRounds: 2 },
  { name: 'SQLite, 1 process, chat', kind: 'sqlite', processes: 1, slots: 1000, toolRounds: 0, work: 'sessions' },
  { name: 'PostgreSQL, 1 process, chat', kind: 'postgres', processes: 1, slots: 1000, toolRounds: 0, work: 'sessions' },
];

interface Result {
  scenario: Scenario;
  seconds: number;
  limit: number;
  cpuMsPerCall: number;
  /** The same while the workers worked their first WARM_UP tasks each. */
  coldCpuMsPerCall: number;
  rssPerRunKb: number;
  peak: number;
  newcomerMs: number;
  calls: number;
  /** PostgreSQL's count of deadlocks in the row's database over its whole run (null on SQLite). */
  deadlocks: number | null;
}

/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

function rssKb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
}

async function until(check: () => Promise<boolean>, everyMs = 250): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, everyMs));
}

async function run(dataDir: string, scenario: Scenario, model: BenchModel): Promise<Result> {
  const p = await provision(path.join(dataDir, scenario.name.replace(/\W+/g, '-')), 's00', { kind: scenario.kind });
  const scribes = [p.scribe];
  for (let i = 1; i < SCRIBES; i++) scribes.push(await p.services.scribes.create({ organizationId: p.organizationId, slug: `s${String(i).padStart(2, '0')}`, name: `s${i}` }));
  const newcomer = await p.services.scribes.create({ organizationId: p.organizationId, slug: 'newcomer', name: 'newcomer' });
  for (const scribe of [...scribes, newcomer]) await p.services.scribes.setAgent(p.organizationId, scribe.slug, { agent: 'openai' });
  await p.close();

  // At info: the worker's start line says it is ready (lib.ts, startWorker).
  const env = { ...p.env, LOG_LEVEL: 'info', OPENAI_BASE_URL: model.url, OPENAI_API_KEY: 'bench', OPENAI_MODEL: 'bench-model', AGENT_CONCURRENCY: String(scenario.slots) };
  console.log(`${scenario.name}: starting ${scenario.processes} worker(s)`);
  const workers = await Promise.all(Array.from({ length: scenario.processes }, () => startWorker(env)));
  const db = openDatabase(p.install.databaseUrl);
  const deadlocksBefore = scenario.kind === 'postgres' ? await deadlocksOf(db) : null;
  try {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const pids = workers.map((w) => w.child.pid!);
    const idleRss = pids.map(rssKb);
    let peakRss = idleRss.map(() => 0);
    const sampler = setInterval(() => (peakRss = pids.map((pid, i) => Math.max(peakRss[i]!, rssKb(pid)))), 200);
    const cpuOf = () => pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
    const insertBacklog = async (n: number) => {
      for (const scribe of scribes) await (scenario.work === 'sessions' ? insertSessions : insertAccepted)(db, p.organizationId, scribe.id, n / SCRIBES);
    };
    /** Until no receipt, task or session is left to work. */
    const drained = () => until(async () => !(await workLeft(db)));
    // Cold: the first work of fresh workers.
    const coldBefore = cpuOf();
    const warmUp = WARM_UP * scenario.processes;
    await insertBacklog(warmUp);
    await drained();
    const coldCpu = cpuOf() - coldBefore;
    const coldCalls = model.stats.calls;
    console.log(`${scenario.name}: ${warmUp} to warm up, ${((coldCpu * 1000) / coldCalls).toFixed(2)} ms CPU per call`);
    const settle = SETTLE * scenario.processes;
    if (settle > 0) {
      await insertBacklog(settle);
      await drained();
      console.log(`${scenario.name}: ${settle} more to settle`);
    }
    model.reset();
    const cpuBefore = cpuOf();
    await insertBacklog(TASKS);
    console.log(`${scenario.name}: ${TASKS} ${scenario.work === 'sessions' ? 'chat sessions started' : 'receipts accepted'}`);
    // The workers may begin while the backlog is still being written (a scribe's part at a time): the drain starts at the model's first call.
    const firstCall = await new Promise<number>((resolve) => {
      const look = setInterval(() => model.stats.firstAt !== undefined && (clearInterval(look), resolve(model.stats.firstAt)), 5);
    });

    // A scribe with no backlog gets one task while the others' backlog is worked.
    await new Promise((resolve) => setTimeout(resolve, NEWCOMER_AFTER_MS));
    const marker = `newcomer-${scenario.kind}-${scenario.processes}-${scenario.toolRounds}`;
    model.watch(marker);
    const receipt = { ...receiptRow(p.organizationId, newcomer.id), summary: marker, title: marker };
    await db('requests').insert(receipt);
    // As a web process that accepted it would: on PostgreSQL it tells the workers at once (SQLite's workers poll).
    if (scenario.kind === 'postgres') await db.raw('select pg_notify(?, ?)', ['scribe_requests', receipt.id]);
    await drained();
    clearInterval(sampler);
    const cpu = cpuOf() - cpuBefore;
    const last = await db(scenario.work ?? 'tasks')
      .max({ at: 'updated_at' })
      .first();
    const seconds = (Date.parse(String(last!.at)) - firstCall) / 1000;
    const task = await db('tasks').where({ request_id: receipt.id }).first('created_at');
    const newcomerMs = model.firstSeenAt(marker)! - Date.parse(task.created_at);
    if (scenario.work === 'sessions') {
      await checkAnsweredOnce(db, TASKS + warmUp + settle);
      await checkOnce(db, 1);
    } else await checkOnce(db, TASKS + warmUp + settle + 1);
    const calls = model.stats.calls;
    if (calls !== (TASKS + 1) * (scenario.toolRounds + 1)) throw new Error(`${scenario.name}: ${calls} model calls for ${TASKS + 1} tasks`);
    const slots = scenario.slots * scenario.processes;
    const result: Result = {
      scenario,
      seconds,
      limit: (TASKS * (scenario.toolRounds + 1) * MODEL_MS) / 1000 / slots,
      cpuMsPerCall: (cpu * 1000) / calls,
      coldCpuMsPerCall: (coldCpu * 1000) / coldCalls,
      rssPerRunKb: peakRss.reduce((sum, peak, i) => sum + peak - idleRss[i]!, 0) / Math.max(1, model.stats.peak),
      peak: model.stats.peak,
      newcomerMs,
      calls,
      deadlocks: deadlocksBefore === null ? null : (await deadlocksOf(db)) - deadlocksBefore,
    };
    console.log(
      `${scenario.name}: ${TASKS} ${scenario.work ?? 'tasks'} in ${seconds.toFixed(2)} s (limit ${result.limit.toFixed(1)} s, ${(seconds / result.limit).toFixed(2)}×), ` +
        `peak ${result.peak} calls at once, ${result.cpuMsPerCall.toFixed(2)} ms CPU per call, ${Math.round(result.rssPerRunKb)} KiB per run, newcomer started in ${newcomerMs} ms` +
        (result.deadlocks === null ? '' : `, ${result.deadlocks} deadlocks`),
    );
    return result;
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await db.destroy();
  }
}

/** The references under the rows: the same model calls, made by a process that does nothing else (alone.ts). */
const FLOOR = 'The OpenAI SDK alone, 1 process';
const AGENT_ALONE = 'The openai agent alone, 1 process';
const REFERENCES = [
  { name: FLOOR, script: 'test/bench/sdk-alone.ts' },
  { name: AGENT_ALONE, script: 'test/bench/agent-alone.ts' },
] as const;
const REFERENCE_SLOTS = 1000;
type Reference = Omit<Result, 'scenario' | 'rssPerRunKb' | 'newcomerMs' | 'deadlocks'> & { name: string };

/** A reference's drain (the floor: sdk-alone.ts; the agent alone: agent-alone.ts). */
async function reference(model: BenchModel, { name, script }: (typeof REFERENCES)[number]): Promise<Reference> {
  console.log(`${name}: ${TASKS} calls after ${WARM_UP + SETTLE} to warm up, ${REFERENCE_SLOTS} at once`);
  model.reset();
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], {
    env: { PATH: process.env.PATH ?? '', MODEL_URL: model.url, CALLS: String(TASKS), WARM_UP: String(WARM_UP), SETTLE: String(SETTLE), AT_ONCE: String(REFERENCE_SLOTS) },
  });
  const { seconds, cpuMs, coldCpuMs } = JSON.parse(stdout) as { seconds: number; cpuMs: number; coldCpuMs: number };
  const { peak } = model.stats;
  const calls = model.stats.calls - WARM_UP - SETTLE;
  if (calls !== TASKS) throw new Error(`${name}: ${calls} model calls for ${TASKS} after ${WARM_UP + SETTLE} to warm up`);
  const limit = (TASKS * MODEL_MS) / 1000 / REFERENCE_SLOTS;
  console.log(`${name}: ${calls} calls in ${seconds.toFixed(2)} s (${(seconds / limit).toFixed(2)}×), ${(cpuMs / calls).toFixed(2)} ms CPU per call`);
  return { name, seconds, limit, cpuMsPerCall: cpuMs / calls, coldCpuMsPerCall: coldCpuMs / WARM_UP, peak, calls };
}

/** An accepted receipt's row, as a submit leaves it (api.ts inserts them in bulk the same way). */
function receiptRow(organizationId: string, scribeId: string) {
  const now = new Date();
  const at = now.toISOString();
  return {
    id: newRequestId(now),
    organization_id: organizationId,
    scribe_id: scribeId,
    status: 'accepted',
    entity_type: 'task',
    available_at: at,
    attempts: 0,
    created_at: at,
    updated_at: at,
  };
}

/** `n` chat sessions of the scribe, each with the user's first message and owed an answer, as a burst of chats would leave them. */
async function insertSessions(db: Db, organizationId: string, scribeId: string, n: number): Promise<void> {
  const at = new Date().toISOString();
  const sessions = Array.from({ length: n }, () => ({
    id: newId(),
    organization_id: organizationId,
    scribe_id: scribeId,
    state: 'queued',
    reply_due: true,
    attempts: 0,
    created_at: at,
    updated_at: at,
  }));
  for (let i = 0; i < sessions.length; i += 500) {
    const piece = sessions.slice(i, i + 500);
    await db.transaction(async (trx) => {
      await trx('sessions').insert(piece);
      await trx('session_messages').insert(piece.map((session) => ({ session_id: session.id, author: 'user', text: 'Hello: what can you do?', created_at: at })));
      await bringRunTurnsForward(trx, [scribeId], at);
    });
  }
}

/** Every session was answered once by the scribe, and none is owed an answer. */
async function checkAnsweredOnce(db: Db, expected: number): Promise<void> {
  const answers = await db('session_messages').where({ author: 'scribe' }).groupBy('session_id').select('session_id').count({ n: '*' });
  const twice = answers.filter((row) => Number(row.n) !== 1).length;
  if (answers.length !== expected || twice > 0) throw new Error(`${answers.length} sessions answered, ${twice} more than once; expected ${expected}`);
}

/** Every receipt made one task, and every task was recorded done exactly once. */
async function checkOnce(db: Db, expected: number): Promise<void> {
  const done = await db('task_events').where({ to_status: 'done' }).groupBy('task_id').select('task_id').count({ n: '*' });
  const twice = done.filter((row) => Number(row.n) !== 1).length;
  const tasks = Number((await db('tasks').count({ n: '*' }).first())!.n);
  if (done.length !== expected || twice > 0 || tasks !== expected)
    throw new Error(`${tasks} tasks, ${done.length} done, ${twice} recorded done more than once; expected ${expected}`);
}

export async function benchAgents(dataDir: string): Promise<void> {
  const cluster = await startPostgresCluster({ durable: true });
  process.env.TEST_POSTGRES_URL = cluster.url;
  const results: Result[] = [];
  const references: Reference[] = [];
  try {
    // BENCH_AGENT_ONLY: the scenario of that name, or those whose name contains it (a quick look at one).
    const only = process.env.BENCH_AGENT_ONLY ?? '';
    const exact = SCENARIOS.some((s) => s.name === only);
    for (const ref of REFERENCES.filter((r) => r.name.includes(only))) {
      const model = await startBenchModel({ delayMs: MODEL_MS, toolRounds: 0 });
      references.push(await reference(model, ref).finally(() => model.close()));
    }
    for (const scenario of SCENARIOS.filter((s) => (exact ? s.name === only : s.name.includes(only)))) {
      const model = await startBenchModel({ delayMs: MODEL_MS, toolRounds: scenario.toolRounds });
      try {
        results.push(await run(dataDir, scenario, model));
      } finally {
        await model.close();
      }
    }
  } finally {
    await cluster.stop();
  }
  const floorCpu = references.find((r) => r.name === FLOOR)?.cpuMsPerCall;
  const againstFloor = (r: { cpuMsPerCall: number }) => (floorCpu ? `${(r.cpuMsPerCall / floorCpu).toFixed(1)}×` : '');
  writeSection('agents', [
    '## Agent runtime with a model that answers in a second',
    '',
    `One run: ${machineLine()}. A local OpenAI-compatible server answers every call after ${MODEL_MS} ms, streamed when asked;`,
    `${TASKS.toLocaleString('en')} tasks over ${SCRIBES} scribes (accepted receipts, dispatched by the workers) are worked by worker processes`,
    "(`PROCESS_ROLE=worker`) with `AGENT_CONCURRENCY` slots each. The limit is Little's law: tasks × model calls per task × 1 s ÷ slots.",
    '',
    `| scenario | slots | drain | limit | of limit | most calls at once | CPU per model call | against the floor | each process's first ${WARM_UP.toLocaleString('en')}: CPU per call | memory per run in flight | new scribe's first run starts |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...references.map(
      (r) =>
        `| ${r.name}, no database${r.name === FLOOR ? ': the floor' : ''} | ${REFERENCE_SLOTS} | ${r.seconds.toFixed(1)} s | ${r.limit.toFixed(1)} s | ${(r.seconds / r.limit).toFixed(2)}× | ${r.peak} | ${r.cpuMsPerCall.toFixed(3)} ms | ${againstFloor(r)} | ${r.coldCpuMsPerCall.toFixed(2)} ms | | |`,
    ),
    ...results.map(
      (r) =>
        `| ${r.scenario.name} | ${r.scenario.slots * r.scenario.processes} | ${r.seconds.toFixed(1)} s | ${r.limit.toFixed(1)} s | ${(r.seconds / r.limit).toFixed(2)}× | ${r.peak} | ${r.cpuMsPerCall.toFixed(3)} ms | ${againstFloor(r)} | ${r.coldCpuMsPerCall.toFixed(2)} ms | ${Math.round(r.rssPerRunKb)} KiB | ${r.newcomerMs} ms |`,
    ),
    '',
    "Targets: drain within 1.25× the limit; CPU ≤ 0.5 ms per model call (the workers' user and system time, claims and",
    "recording included, divided by model calls); a new scribe's first run within 1.5 s of its task being made. The workers",
    `first work ${(WARM_UP + SETTLE).toLocaleString('en')} tasks each (sessions in the chat rows) of the same scribes, then the measured ${TASKS.toLocaleString('en')}: in a fresh`,
    'process V8 spends its first seconds of work compiling the hot code on background threads, once per process start, and',
    `goes on compiling less and less for some ${(WARM_UP + SETTLE).toLocaleString('en')} tasks. The column "each process's first ${WARM_UP.toLocaleString('en')}" is the CPU per call of`,
    'the first of them, compilation included; the floor is measured the same way. Every',
    'receipt was checked to have made one task, recorded done exactly once. Drain: from the first model call to the last',
    "task recorded done. The model server and the database share the 2 cores with the workers. The new scribe's receipt is",
    'inserted 3 s into the backlog and, on PostgreSQL, announced with NOTIFY as a web process that accepted it would.',
    `The chat rows: ${TASKS.toLocaleString('en')} sessions over the same scribes, each with a first message and owed an answer, each`,
    'checked to have been answered by its scribe exactly once; drain to the last session answered.',
    `Deadlocks PostgreSQL ended in each PostgreSQL row's database (\`pg_stat_database\`), warm-up included: ${
      results
        .filter((r) => r.deadlocks !== null)
        .map((r) => `${r.scenario.name} ${r.deadlocks}`)
        .join(', ') || 'no PostgreSQL row run'
    }.`,
    `The floor: as many calls, ${REFERENCE_SLOTS} at once, made by the OpenAI SDK over the workers' fetch with a one-line request,`,
    'streamed and read to the end, in a process that claims, traces and records nothing (test/bench/sdk-alone.ts). The openai',
    `agent alone: the workers' agent (agents/openai.ts) working tasks like the bench's, ${REFERENCE_SLOTS} at once, so with the request the`,
    "product sends (a system prompt, the task, the tools' definitions), in a process that claims and records nothing",
    '(test/bench/agent-alone.ts): the rows over it are what claiming the work, recording it and telling of it add.',
    '"Against the floor": the CPU per call over the floor\'s in the same run: this machine\'s speed moves both from hour to',
    'hour, while what Scribe adds to each call moves the ratio.',
  ]);
}
