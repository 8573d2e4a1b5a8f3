import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

/** Starts an entry point (`src/main.ts`, `src/demo.ts`) from source and waits until it listens. */
export async function startProcess(entry: string, env: Record<string, string>, timeoutMs = 20_000): Promise<ServerProcess> {
  // The listening log line, or the demo's banner (the demo logs at warn unless told otherwise).
  const { match, ...started } = await startUntil(entry, { HOST: '127.0.0.1', PORT: '0', ...env }, /"url":"(http:\/\/[^"]+)"|Scribe demo is running at (http:\/\/\S+)/, 'listening', timeoutMs);
  return { ...started, url: (match[1] ?? match[2])! };
}

/** Starts `src/main.ts` as a worker (PROCESS_ROLE=worker: no URL) and waits for its start line. */
export async function startWorkerProcess(env: Record<string, string>, timeoutMs = 20_000): Promise<ServerProcess> {
  const { child, output, exited } = await startUntil('src/main.ts', env, /"msg":"scribe worker started"/, 'worker started', timeoutMs);
  return { child, output, exited, url: '' };
}

/** Starts an entry point from source and waits until its output matches `pattern`. */
async function startUntil(entry: string, env: Record<string, string>, pattern: RegExp, what: string, timeoutMs: number) {
  const file = fileURLToPath(new URL(`../../${entry}`, import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', file], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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
export function runToExit(entry: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const file = fileURLToPath(new URL(`../../${entry}`, import.meta.url));
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], { env: { PATH: process.env.PATH ?? '', ...env } });
    let output = '';
    child.stdout.on('data', (c) => (output += c));
    child.stderr.on('data', (c) => (output += c));
    child.once('exit', (code) => resolve({ code, output }));
  });
}
