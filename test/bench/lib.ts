/** What the benchmark scenarios share: servers in their own processes, autocannon, the report file. */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import autocannon, { type Result } from 'autocannon';
import type { Db } from '../../src/db/knex.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CONNECTIONS = 50;
export const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
/** Load before each measured row, so that it measures the warm server (caches, statistics, JIT), not its first requests. */
export const WARMUP_S = 2;
/** How each row's load is run, for the sections' first line. */
export const LOAD_LINE = `${CONNECTIONS} connections, ${DURATION_S} s per row after ${WARMUP_S} s of warm-up`;
const REPORT = path.join(ROOT, 'docs/benchmarks.md');

export interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  ratio?: number;
  note?: string;
  /** Responses that failed, timed out or had another status; reported, not hidden. */
  errors: number;
}

export interface Server {
  child: ChildProcess;
  url: string;
  stop(): Promise<void>;
}

/** Stops a child process gracefully (SIGTERM) and waits for it to exit. */
function stopper(child: ChildProcess): () => Promise<void> {
  return async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
}

/** Starts a server process on a free port; ready once GET `readyPath` answers. */
export async function startServer(command: string[], env: Record<string, string>, readyPath = '/healthz', { quiet = false } = {}): Promise<Server> {
  const port = await new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
  const child = spawn(process.execPath, command, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env, PORT: String(port) },
    stdio: quiet ? ['ignore', 'ignore', 'inherit'] : 'inherit',
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = stopper(child);
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) break;
    if (
      await fetch(`${url}${readyPath}`).then(
        (r) => r.status < 500,
        () => false,
      )
    )
      return { child, url, stop };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill();
  throw new Error(`${command.join(' ')} did not come up`);
}

/** One autocannon run; responses that were not 2xx, errors and timeouts are counted in `errors`. */
export async function load(name: string, options: autocannon.Options): Promise<Row> {
  // autocannon takes `warmup` (lib/init.js); its type definitions do not list it yet.
  const run: autocannon.Options & { warmup: { connections: number; duration: number } } = {
    connections: CONNECTIONS,
    duration: DURATION_S,
    warmup: { connections: options.connections ?? CONNECTIONS, duration: WARMUP_S },
    ...options,
  };
  const result: Result = await autocannon(run);
  const errors = result.non2xx + result.errors + result.timeouts;
  const row = { name, rps: Math.round(result.requests.average), p50: result.latency.p50, p99: result.latency.p99, errors };
  console.log(`${name.padEnd(34)} ${String(row.rps).padStart(7)} req/s  p50 ${row.p50} ms  p99 ${row.p99} ms  errors ${errors}`);
  return row;
}

export function machineLine(): string {
  return `${os.cpus().length} cores, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}`;
}

/** Replaces the section between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`, or appends it. */
export function writeSection(name: string, lines: string[]): void {
  const start = `<!-- bench:${name} -->`;
  const end = `<!-- /bench:${name} -->`;
  const block = [start, ...lines, end].join('\n');
  let text = fs.existsSync(REPORT) ? fs.readFileSync(REPORT, 'utf8') : '';
  if (!text.includes('# Benchmarks')) text = HEADER;
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  text = from >= 0 && to > from ? text.slice(0, from) + block + text.slice(to + end.length) : `${text.trimEnd()}\n\n${block}\n`;
  fs.writeFileSync(REPORT, text);
}

const HEADER = `# Benchmarks

Produced by \`npm run bench\` (test/bench/); each section is rewritten by the run that measures
it. Servers run in their own processes from \`dist/\` with \`LOG_LEVEL=warn\`; autocannon runs on
loopback with ${CONNECTIONS} connections. Absolute numbers vary between machines and runs; compare
ratios measured in the same run. Where the time goes: [performance.md](performance.md).
`;

/** Starts `dist/main.js` as a worker (PROCESS_ROLE=worker, no port); ready once it logs its start line. */
export async function startWorker(env: Record<string, string>): Promise<Pick<Server, 'child' | 'stop'>> {
  // BENCH_WORKER_ARGS: Node options for the workers, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to see where their CPU goes.
  const nodeArgs = process.env.BENCH_WORKER_ARGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...nodeArgs, 'dist/main.js'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env, PROCESS_ROLE: 'worker' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const stop = stopper(child);
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk) => {
      if (output.includes('"msg":"scribe worker started"')) return; // started: the rest is read and dropped
      output += chunk;
      if (output.includes('"msg":"scribe worker started"')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`worker exited with ${code} before it started:\n${output}`)));
  });
  return { child, stop };
}

/**
 * Whether any receipt, task or session is left to work. The benches poll it while work drains,
 * so it reads only the work queues' partial indexes: a count of every task not done scanned the whole
 * table, several milliseconds of the database's CPU at each poll, taken from the work measured.
 */
export async function workLeft(db: Db): Promise<boolean> {
  const left = await db
    .select(
      db.raw(
        `exists (select 1 from requests where status in ('accepted', 'dispatched'))
          or exists (select 1 from tasks where status in ('open', 'in_progress') and claim_token is null)
          or exists (select 1 from tasks where claim_token is not null)
          or exists (select 1 from sessions where reply_due) as "left"`,
      ),
    )
    .first();
  return Boolean(left.left);
}
