import { execFile, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A throwaway PostgreSQL cluster in a temp folder; trust auth, 127.0.0.1 only. */
export interface PostgresCluster {
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  url: string;
  port: number;
  dir: string;
  stop(): Promise<void>;
}

const isRoot = process.getuid?.() === 0;

/** Highest /usr/lib/postgresql/N/bin (Debian), else `pg_config --bindir`, else initdb on PATH. */
export function findPostgresBinDir(): string {
  const debian = '/usr/lib/postgresql';
  const versions = fs.existsSync(debian)
    ? fs
        .readdirSync(debian)
        .filter((v) => /^\d+(\.\d+)?$/.test(v) && fs.existsSync(path.join(debian, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions[0]) return path.join(debian, versions[0], 'bin');
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (fs.existsSync(path.join(dir, 'initdb'))) return dir;
  } catch {
    // no pg_config: fall through to PATH
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && fs.existsSync(path.join(dir, 'initdb'))) return dir;
  }
  throw new Error('PostgreSQL binaries not found (looked in /usr/lib/postgresql/*/bin, pg_config --bindir, PATH)');
}

/** initdb and pg_ctl refuse to run as root, so as root they run as the `postgres` user. */
function asServerUser(bin: string, args: string[]): [string, string[]] {
  return isRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
}

function postgresIds(): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function logTail(file: string, lines = 40): string {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** The failed command's message and stderr, then the server log's tail. */
function failure(step: string, err: unknown, log: string): Error {
  const stderr = (err as { stderr?: string }).stderr?.trim();
  return new Error(`${step} failed: ${(err as Error).message}${stderr ? `\n${stderr}` : ''}\n--- ${log} (tail) ---\n${logTail(log)}`);
}

/** Single-quotes for the shell pg_ctl passes `-o` through. */
const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * Stops the cluster once `pid` is gone. The 'exit' handler covers normal exits;
 * this covers signals and SIGKILL, where Node runs no handlers at all.
 */
function startWatchdog(pid: number, pgCtl: string, dir: string): number | undefined {
  const [cmd, args] = asServerUser(pgCtl, ['-D', path.join(dir, 'data'), 'stop', '-m', 'immediate']);
  const stop = [cmd, ...args].map(shellQuote).join(' ');
  const script = `while kill -0 ${pid} 2>/dev/null && [ -d ${shellQuote(dir)} ]; do sleep 1; done
[ -d ${shellQuote(dir)} ] && { ${stop} >/dev/null 2>&1; rm -rf ${shellQuote(dir)}; }`;
  const child = spawn('sh', ['-c', script], { detached: true, stdio: 'ignore', cwd: os.tmpdir() });
  child.unref();
  return child.pid;
}

/**
 * `durable: false` (the tests) trades crash safety for speed; `durable: true` (the benchmarks)
 * keeps PostgreSQL's own defaults, as an install would run it.
 */
export async function startPostgresCluster({ durable = false }: { durable?: boolean } = {}): Promise<PostgresCluster> {
  const bin = findPostgresBinDir();
  const pgCtl = path.join(bin, 'pg_ctl');
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'scribe-pg-'));
  const data = path.join(dir, 'data');
  const log = path.join(dir, 'log');
  // cwd inside the temp dir: the postgres user may not be able to read the caller's cwd.
  const exec = (file: string, args: string[]) => run(...asServerUser(file, args), { cwd: dir, encoding: 'utf8' });

  // Synchronous, for the 'exit' event; a no-op once the dir is gone.
  const stopSync = () => {
    if (!fs.existsSync(dir)) return;
    try {
      const [cmd, args] = asServerUser(pgCtl, ['-D', data, 'stop', '-m', 'immediate']);
      execFileSync(cmd, args, { cwd: os.tmpdir(), stdio: 'ignore' });
    } catch {
      // not running, or already gone
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  let watchdog: number | undefined;
  // Both stay armed until the dir is gone: a kill half-way through stop() must not leak it.
  const disarm = () => {
    process.removeListener('exit', stopSync);
    try {
      if (watchdog) process.kill(watchdog);
    } catch {
      // already exited (it also quits by itself once the dir is gone)
    }
  };
  process.on('exit', stopSync);

  const fail = (step: string, err: unknown): never => {
    const error = failure(step, err, log); // read the log before the dir goes
    stopSync();
    disarm();
    throw error;
  };

  if (isRoot) {
    try {
      const { uid, gid } = postgresIds();
      await fs.promises.chown(dir, uid, gid);
    } catch (err) {
      fail('chown to postgres', err);
    }
  }
  watchdog = startWatchdog(process.pid, pgCtl, dir);
  try {
    await exec(path.join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C', '-N']);
  } catch (err) {
    fail('initdb', err);
  }

  // Another process can grab the port between freePort() and bind; retry a few times.
  let port = 0;
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    const options = [
      `-p ${port}`,
      `-k ${shellQuote(dir)}`,
      '-c listen_addresses=127.0.0.1',
      ...(durable ? [] : ['-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off']),
      '-c max_connections=300',
      '-c shared_buffers=128MB',
    ].join(' ');
    try {
      await exec(pgCtl, ['-D', data, '-l', log, '-w', '-o', options, 'start']);
      break;
    } catch (err) {
      if (attempt >= 3 || !/could not (bind|create listen)/i.test(logTail(log))) fail('pg_ctl start', err);
    }
  }

  let stopping: Promise<void> | undefined;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    stop() {
      stopping ??= (async () => {
        let error: Error | undefined;
        try {
          await exec(pgCtl, ['-D', data, 'stop', '-m', 'immediate']);
        } catch (err) {
          error = failure('pg_ctl stop', err, log);
        }
        await fs.promises.rm(dir, { recursive: true, force: true });
        disarm();
        if (error) throw error;
      })();
      return stopping;
    },
  };
}
