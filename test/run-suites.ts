// The `npm test` runner: the mocha suite once per database, in parallel, sharing one
// throwaway PostgreSQL cluster, with the type check and the linter beside them. Usage:
// node --import tsx test/run-suites.ts [mocha args] (given mocha args, those runs only).
// TEST_DATABASES=sqlite,postgres (the default) picks which runs happen.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildIfStale } from './helpers/build.js';
import { startPostgresCluster, type PostgresCluster } from './helpers/postgres-cluster.js';

const suites = { sqlite: 'SQLite', postgres: 'PostgreSQL' } as const;
type Suite = keyof typeof suites;

interface RunResult {
  suite: Suite;
  code: number | null;
  output: string;
}

const root = fileURLToPath(new URL('..', import.meta.url));
// The repo's mocha binary, run by this node (what `npx mocha` resolves to, minus npm's start-up).
const mochaBin = createRequire(import.meta.url).resolve('mocha/bin/mocha.js');

function selectedSuites(): Suite[] {
  const names = (process.env.TEST_DATABASES ?? 'sqlite,postgres')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const name of names) {
    if (!(name in suites)) throw new Error(`TEST_DATABASES: unknown database "${name}" (expected ${Object.keys(suites).join(', ')})`);
  }
  if (names.length === 0) throw new Error('TEST_DATABASES names no database');
  return [...new Set(names)] as Suite[];
}

const children = new Set<ChildProcess>();

/**
 * Tests passed and failed so far, from the spec reporter's lines (✔ and "N) "), up to its
 * epilogue ("N passing"), which lists each failure again.
 */
function tally(output: string): string {
  const all = stripAnsi(output);
  const epilogue = all.search(/^\s*\d+ passing\b/m);
  const text = epilogue === -1 ? all : all.slice(0, epilogue);
  const passed = text.match(/^\s*✔ /gm)?.length ?? 0;
  const failed = text.match(/^\s*\d+\) /gm)?.length ?? 0;
  return `${passed} passed${failed > 0 ? `, ${failed} failed` : ''}`;
}

interface Run {
  suite: Suite;
  /** How far the run is, while it runs. */
  progress(): string;
  result: Promise<RunResult>;
}

/** One mocha run; stdout and stderr go to one buffer so runs don't interleave. */
function runMocha(suite: Suite, args: string[], env: NodeJS.ProcessEnv): Run {
  const child = spawn(process.execPath, [mochaBin, ...args], {
    cwd: root,
    env: { ...env, TEST_DATABASE: suite },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const chunks: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => chunks.push(c));
  child.stderr.on('data', (c: Buffer) => chunks.push(c));
  const result = new Promise<RunResult>((resolve) => {
    child.once('error', (err) => chunks.push(Buffer.from(`\nfailed to start mocha: ${err.message}\n`)));
    // 'close', not 'exit': all output has been read by then.
    child.once('close', (code) => {
      children.delete(child);
      resolve({ suite, code, output: Buffer.concat(chunks).toString('utf8') });
    });
  });
  return { suite, progress: () => tally(Buffer.concat(chunks).toString('utf8')), result };
}

/**
 * Files that run in one database's run only, because what they check is the same on either
 * database: the unit tests open none, the browser tests check what Chromium does with the
 * console's pages (test/console checks those pages' content on each database), and the
 * clean-clone install starts its own server on SQLite whatever the run. The first run (SQLite
 * by default) takes the browser tests, its largest part; the install, the next largest file,
 * goes to the last, so that neither run ends long after the other with one core idle.
 */
const ONE_RUN_ONLY: ReadonlyArray<{ files: string; run: 'first' | 'last' }> = [
  { files: 'test/unit/', run: 'first' },
  { files: 'test/browser/', run: 'first' },
  { files: 'test/server/install.test.ts', run: 'last' },
];

/**
 * The whole suite's mocha config (.mocharc.json) with its test files listed, in name order or
 * the reverse, without ONE_RUN_ONLY's files that belong to another run (none with one run).
 * The two runs go through the files in opposite orders, so that one run's stretches of CPU
 * (the browser tests) meet the other's stretches of waiting (processes, leases, timers) rather
 * than its own: both runs in name order kept the two cores busy little more than half the time.
 */
function configInOrder(reversed: boolean, { first, last }: { first: boolean; last: boolean }): string {
  const config = JSON.parse(fs.readFileSync(path.join(root, '.mocharc.json'), 'utf8')) as { spec: string[] };
  // The files the config's spec names; its patterns are folders and endings (test/**/*.test.ts).
  const files = config.spec
    .flatMap((pattern) => {
      const [, folder, ending] = /^([^*]+)\/\*\*\/\*([^*/]+)$/.exec(pattern) ?? [];
      if (!folder || !ending) throw new Error(`.mocharc.json: run-suites.ts lists the files of specs like test/**/*.test.ts, not ${pattern}`);
      return fs
        .readdirSync(path.join(root, folder), { recursive: true, encoding: 'utf8' })
        .filter((file) => file.endsWith(ending))
        .map((file) => path.posix.join(folder, file.split(path.sep).join('/')));
    })
    .filter((file) => ONE_RUN_ONLY.every(({ files, run }) => !file.startsWith(files) || (run === 'first' ? first : last)))
    .sort();
  if (reversed) files.reverse();
  const file = path.join(os.tmpdir(), `scribe-mocharc-${process.pid}-${reversed ? 'reversed' : 'sorted'}.json`);
  fs.writeFileSync(file, JSON.stringify({ ...config, spec: files }));
  return file;
}

/**
 * The checks `npm test` makes of the code beside the runs: tsc and Biome each keep one core busy
 * for some seconds, which the runs' first stretch (the build, the cluster, mocha loading the
 * files) leaves idle; one after the other before the runs, they held the runs back by as long.
 */
const STATIC_CHECKS: ReadonlyArray<{ name: string; script: string }> = [
  { name: 'Type check', script: 'typecheck' },
  { name: 'Lint', script: 'lint' },
];

interface CheckResult {
  name: string;
  ok: boolean;
  output: string;
}

/** One of STATIC_CHECKS, through its npm script (package.json says what it runs). */
function runCheck({ name, script }: { name: string; script: string }): Promise<CheckResult> {
  const child = spawn('npm', ['run', '--silent', script], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  const chunks: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => chunks.push(c));
  child.stderr.on('data', (c: Buffer) => chunks.push(c));
  return new Promise((resolve) => {
    child.once('error', (err) => chunks.push(Buffer.from(`failed to start npm run ${script}: ${err.message}\n`)));
    child.once('close', (code) => {
      children.delete(child);
      resolve({ name, ok: code === 0, output: Buffer.concat(chunks).toString('utf8') });
    });
  });
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes start with ESC
const stripAnsi = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '');

/** The count on mocha's last "  N <word>" epilogue line, if it printed one. */
function count(output: string, word: 'passing' | 'failing' | 'pending'): number | undefined {
  const matches = [...stripAnsi(output).matchAll(new RegExp(`^\\s*(\\d+) ${word}\\b`, 'gm'))];
  const last = matches.at(-1);
  return last ? Number(last[1]) : undefined;
}

/**
 * The failures mocha's epilogue lists after its "N failing" line (each title and error), without
 * that line, so that the total below stays the last count a CI grep finds; undefined if none.
 */
function failureReport(output: string): string | undefined {
  const text = stripAnsi(output);
  const failing = [...text.matchAll(/^\s*\d+ failing\b.*$/gm)].at(-1);
  if (!failing || failing.index === undefined) return undefined;
  return text.slice(failing.index + failing[0].length).trim() || undefined;
}

async function main(): Promise<number> {
  const wanted = selectedSuites();
  const args = process.argv.slice(2);
  const env: NodeJS.ProcessEnv = { ...process.env };
  // Keep colours when a person is watching, even though mocha writes into a pipe.
  if (process.stdout.isTTY && env.FORCE_COLOR === undefined && env.NO_COLOR === undefined) env.FORCE_COLOR = '1';

  let cluster: PostgresCluster | undefined;
  let interrupted: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) {
      // Second signal: stop waiting. The cluster's 'exit' handler still stops it.
      for (const child of children) child.kill('SIGKILL');
      process.exit(128 + (os.constants.signals[signal] ?? 1));
    }
    interrupted = signal;
    for (const child of children) child.kill(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  // The whole suite checks the code too; a run of chosen files (mocha arguments) does not.
  const checks = args.length > 0 ? [] : STATIC_CHECKS.map(runCheck);
  // Once here, before the runs start, rather than by both runs at once.
  buildIfStale();
  if (wanted.includes('postgres') && !env.TEST_POSTGRES_URL) {
    const started = Date.now();
    cluster = await startPostgresCluster();
    env.TEST_POSTGRES_URL = cluster.url;
    console.error(`PostgreSQL cluster on port ${cluster.port} ready in ${Date.now() - started} ms`);
  }

  // Given no mocha arguments, the whole suite, each run in its own order of files.
  const configs = args.length > 0 || interrupted ? [] : wanted.map((_, i) => configInOrder(i % 2 === 1, { first: i === 0, last: i === wanted.length - 1 }));
  // The console's screenshots in the first run only: every run would write the same files.
  const runs = interrupted ? [] : wanted.map((suite, i) => runMocha(suite, configs[i] ? ['--config', configs[i]] : args, i === 0 ? env : { ...env, TEST_SCREENSHOTS: '0' }));
  // Each run's output is printed whole at its end; meanwhile a line every 30 s says how far they are.
  const started = Date.now();
  const ticker = setInterval(() => {
    const seconds = Math.round((Date.now() - started) / 1000);
    console.error(`… ${seconds} s: ${runs.map((run) => `${suites[run.suite]} ${run.progress()}`).join('; ')}`);
  }, 30_000);
  const results = await Promise.all(runs.map((run) => run.result));
  const checked = await Promise.all(checks);
  clearInterval(ticker);
  for (const config of configs) fs.rmSync(config, { force: true });

  // A run that failed prints last, and its failures again just above the total, so that the
  // end of the log (all a CI page may keep) says what failed.
  const inOrder = [...results].sort((a, b) => Number(a.code !== 0) - Number(b.code !== 0));
  for (const { suite, output } of inOrder) {
    process.stdout.write(`=== ${suites[suite]} ===\n${output}${output.endsWith('\n') ? '' : '\n'}`);
  }
  await cluster?.stop();
  for (const { name, ok, output } of checked) {
    process.stdout.write(`\n=== ${name}: ${ok ? 'passed' : 'failed'} ===\n${ok ? '' : output}`);
  }
  for (const { suite, output } of inOrder) {
    const failures = failureReport(output);
    if (failures) process.stdout.write(`\n=== Failed on ${suites[suite]} ===\n${failures}\n`);
  }

  let passing = 0;
  let failing = 0;
  let pending = 0;
  for (const { suite, code, output } of results) {
    const passed = count(output, 'passing');
    if (passed === undefined) console.error(`${suites[suite]}: mocha printed no summary (exit code ${code})`);
    passing += passed ?? 0;
    failing += count(output, 'failing') ?? 0;
    pending += count(output, 'pending') ?? 0;
  }
  // A failed check counts as a failure in the total, which CI reads.
  failing += checked.filter((check) => !check.ok).length;
  // Mocha's own epilogue form, so CI greps work on the combined total.
  console.log(`\n=== Total (${results.map((r) => suites[r.suite]).join(' + ') || 'nothing ran'}) ===`);
  console.log(`  ${passing} passing`);
  if (pending > 0) console.log(`  ${pending} pending`);
  console.log(`  ${failing} failing`);

  if (interrupted) {
    console.error(`interrupted by ${interrupted}`);
    return 128 + (os.constants.signals[interrupted] ?? 1);
  }
  return results.every((r) => r.code === 0) && checked.every((check) => check.ok) ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
