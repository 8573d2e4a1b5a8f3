import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

// The listening log line, or the demo's banner (the demo logs at warn unless told otherwise).
const LISTENING = /"url":"(http:\/\/[^"]+)"|Scribe demo is running at (http:\/\/\S+)/;

/** Starts an entry point (`src/main.ts`, `src/demo.ts`) as built, the way `npm start` runs it, and waits until it listens. */
export async function startProcess(entry: string, env: Record<string, string>, timeoutMs = 60_000): Promise<ServerProcess> {
  return startCommand(process.execPath, [builtEntry(entry)], { env: { HOST: '127.0.0.1', PORT: '0', ...env } }, timeoutMs);
}

/**
 * Starts a command that runs a server (`npm start` in an install) in a process group of its
 * own and waits until it listens; stop it with `stopGroup`.
 */
export async function startCommand(command: string, args: string[], options: { cwd?: string; env: Record<string, string> }, timeoutMs = 60_000): Promise<ServerProcess> {
  const { match, ...started } = await startUntil(command, args, { ...options, detached: true }, LISTENING, 'listening', timeoutMs);
  return { ...started, url: (match[1] ?? match[2])! };
}

/**
 * Sends SIGTERM to a `startCommand` process and all it started, and waits until all are
 * gone: npm's shell does not pass the signal on, so the server would outlive npm.
 */
export async function stopGroup({ child }: ServerProcess, timeoutMs = 15_000): Promise<void> {
  const group = -child.pid!;
  const signal = (name: NodeJS.Signals | 0) => {
    try {
      process.kill(group, name);
      return true;
    } catch {
      return false; // ESRCH: nobody left
    }
  };
  signal('SIGTERM');
  const deadline = Date.now() + timeoutMs;
  while (signal(0)) {
    if (Date.now() > deadline) {
      signal('SIGKILL');
      throw new Error(`process group ${child.pid} still running ${timeoutMs} ms after SIGTERM`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Starts `src/main.ts` as a worker (PROCESS_ROLE=worker: no URL) and waits for its start line. */
export async function startWorkerProcess(env: Record<string, string>, timeoutMs = 60_000): Promise<ServerProcess> {
  const { child, output, exited } = await startUntil(process.execPath, [builtEntry('src/main.ts')], { env }, /"msg":"scribe worker started"/, 'worker started', timeoutMs);
  return { child, output, exited, url: '' };
}

/**
 * The bundle of a source entry point (`src/main.ts` → `dist/main.js`, `src/cli/admin.ts` →
 * `dist/admin.js`; src/build.mjs), which the suite's global setup builds when the sources
 * changed (helpers/global-fixtures.ts). Child processes run what `npm start` runs: from source
 * through tsx, each would spend about a second of CPU compiling before it starts, and the
 * suite starts hundreds.
 */
export const builtEntry = (entry: string) => fileURLToPath(new URL(`../../dist/${path.basename(entry, '.ts')}.js`, import.meta.url));

/** Starts a command and waits until its output matches `pattern`. */
async function startUntil(
  command: string,
  args: string[],
  { cwd, env, detached }: { cwd?: string; env: Record<string, string>; detached?: boolean },
  pattern: RegExp,
  what: string,
  timeoutMs: number,
) {
  const child = spawn(command, args, { cwd, detached, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const match = await new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "${what}" line within ${timeoutMs} ms:\n${output}`)), timeoutMs);
    child.stdout!.on('data', () => {
      const found = pattern.exec(output);
      if (found) {
        clearTimeout(timer);
        resolve(found);
      }
    });
    void exited.then((code) => reject(new Error(`exited with ${code} before ${what}:\n${output}`)));
  });
  return { child, match, output: () => output, exited };
}

/** Runs an entry point to completion (for ones expected to fail at start). */
export function runToExit(
  entry: string,
  env: Record<string, string>,
  { args = [], user }: { args?: string[]; user?: RunAs } = {},
): Promise<{ code: number | null; output: string }> {
  return runCommandToExit(process.execPath, [builtEntry(entry), ...args], { env, user });
}

/** The user a process runs as (spawn's uid and gid: the suite must be root to give them). */
export interface RunAs {
  uid: number;
  gid: number;
}

/** Runs a command to completion; its stdout and stderr as one text. */
export function runCommandToExit(
  command: string,
  args: string[],
  { cwd, env, user }: { cwd?: string; env: Record<string, string>; user?: RunAs },
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env: { PATH: process.env.PATH ?? '', ...env }, ...user });
    let output = '';
    child.stdout.on('data', (c) => (output += c));
    child.stderr.on('data', (c) => (output += c));
    // 'close', not 'exit': all output has been read by then.
    child.once('close', (code) => resolve({ code, output }));
  });
}
