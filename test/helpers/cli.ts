import { execFile } from 'node:child_process';
import { Readable } from 'node:stream';
import { expect } from 'chai';
import { installEnv } from './databases.js';
import { tempDir } from './harness.js';
import { builtEntry } from './process.js';
import { runAdmin as runCli } from '../../src/cli/run.js';

const ADMIN = builtEntry('src/cli/admin.ts');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs an admin CLI command in this process, as the entry point (src/cli/admin.ts) runs it
 * with its own argv, environment and streams. Spawning a process costs far more than the
 * command, and the CLI suites run hundreds; `runAdminProcess` is the real binary, for what
 * only a process shows.
 */
export async function runAdmin(args: string[], env: Record<string, string>, { stdin = '' }: { stdin?: string } = {}): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const streams = { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: (text: string) => (stderr += text) }, stdin: Readable.from([stdin]) };
  const code = await runCli(args, { PATH: process.env.PATH ?? '', ...env }, streams);
  return { code, stdout, stderr };
}

/** Runs the admin CLI as built in a real child process, with `stdin` as its standard input. */
export function runAdminProcess(args: string[], env: Record<string, string>, { stdin = '' }: { stdin?: string } = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [ADMIN, ...args], { env: { PATH: process.env.PATH ?? '', ...env } }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin!.end(stdin);
  });
}

/**
 * A fresh install that a CLI suite drives, opened in the suite's `before` hook (call it in a
 * `describe`): `admin(...)` runs a command, and `json(...)` one that must succeed, printing
 * exactly one JSON object. With `scribe`, the install also has an organization (`orgId`)
 * with that scribe.
 */
export function cliInstall({ scribe }: { scribe?: string } = {}) {
  const dir = tempDir();
  const cli = {
    dir,
    env: {} as Record<string, string>,
    orgId: '',
    admin: (...args: string[]) => runAdmin(args, cli.env),
    /** Runs a command with `stdin` as its standard input (a password). */
    withInput: (stdin: string, ...args: string[]) => runAdmin(args, cli.env, { stdin }),
    async json(...args: string[]) {
      return cli.expectJson(await cli.admin(...args), args);
    },
    /** The one JSON object a successful run printed. */
    expectJson(result: CliResult, args: string[]) {
      expect(result.stderr, args.join(' ')).to.equal('');
      expect(result.code).to.equal(0);
      const lines = result.stdout.trim().split('\n');
      expect(lines, 'exactly one JSON object').to.have.length(1);
      return JSON.parse(lines[0]!);
    },
  };
  before(async () => {
    cli.env = await installEnv(dir);
    if (scribe === undefined) return;
    cli.orgId = (await cli.json('org', 'create', '--name', 'Acme')).id;
    await cli.json('scribe', 'create', '--org', cli.orgId, '--slug', scribe, '--name', scribe);
  });
  return cli;
}
