import { parseArgs } from 'node:util';
import { loadConfig, ConfigError } from '../config.js';
import { createLogger } from '../logger.js';
import { openDatabase } from '../db/knex.js';
import { migrateAtStart } from '../db/migrate.js';
import { DatabaseUnreachableError } from '../db/open-failure.js';
import { createServices } from '../services.js';
import { openSecretBox } from '../secrets/keys.js';
import { HttpError } from '../http/errors.js';
import { BackupFailedError, BackupNotSupportedError } from '../db/dialect.js';
import { CopyRefusedError } from '../db/copy.js';
import { FLAGS, UsageError, commands, usage } from './commands.js';
import { type PasswordInput, readPassword } from './password-input.js';

/** Where a run of the CLI reads and writes: the process's streams, or a test's. */
export interface CliOutput {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  /** Where passwords come from (`user create`, `user set-password`). */
  stdin?: PasswordInput;
}

/**
 * `npm run --silent admin -- <command> [--flags]`: prints exactly one JSON object on stdout
 * and answers 0, or a message on stderr and a non-zero exit code.
 */
export async function runAdmin(argv: string[], env: NodeJS.ProcessEnv, { stdout, stderr, stdin }: CliOutput): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: FLAGS, allowPositionals: true, strict: true });
  } catch (err) {
    stderr.write(`error: ${(err as Error).message}\n${usage()}\n`);
    return 2;
  }
  const words = parsed.positionals.join(' ');
  if (parsed.values.help && !commands[words]) {
    // `--help` alone, or after part of a command: the commands (those that start with what was given).
    const known = Object.entries(commands).filter(([name]) => name.startsWith(words));
    stdout.write(`${usage(known.length > 0 ? Object.fromEntries(known) : commands)}\n`);
    return 0;
  }
  const command = commands[words];
  if (command && parsed.values.help) {
    stdout.write(`usage: npm run --silent admin -- ${command.usage}\n`);
    return 0;
  }
  if (!command) {
    stderr.write(`error: unknown command "${parsed.positionals.join(' ')}"\n${usage()}\n`);
    return 2;
  }
  // Every command parses against all the CLI's flags; one that a command does not take would be ignored.
  const takes = new Set([...Array.from(command.usage.matchAll(/--([a-z][a-z0-9-]*)/g), (m) => m[1]), ...(command.alsoTakes ?? [])]);
  const stray = Object.keys(parsed.values).find((name) => name !== 'help' && !takes.has(name));
  if (stray) {
    stderr.write(`error: "${words}" takes no --${stray}\nusage: ${command.usage}\n`);
    return 2;
  }

  let config;
  let secrets;
  try {
    config = loadConfig(env);
    secrets = openSecretBox(config);
  } catch (err) {
    if (err instanceof ConfigError) {
      stderr.write(`error: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  const logger = createLogger('silent');
  const db = openDatabase(config.databaseUrl, { poolSize: config.databasePoolSize });
  // A command does no background work: what it records (receipts, tasks, webhook events) is the
  // servers' to do, under their settings, found by their poll or told by NOTIFY on PostgreSQL.
  const services = createServices({ config, db, logger, secrets, options: { dispatchOnAccept: false, runOnNewWork: false, deliverOnEvent: false } });
  try {
    await migrateAtStart(db, config.databaseUrl, { secrets });
    const io = { readPassword: () => readPassword(stdin, stderr), warn: (text: string) => void stderr.write(`${text}\n`) };
    const output = await command.run(parsed.values, services, io);
    stdout.write(`${JSON.stringify(output)}\n`);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      stderr.write(`error: ${err.message}\nusage: ${command.usage}\n`);
      return 2;
    }
    if (
      err instanceof HttpError ||
      err instanceof BackupNotSupportedError ||
      err instanceof BackupFailedError ||
      err instanceof CopyRefusedError ||
      err instanceof ConfigError ||
      err instanceof DatabaseUnreachableError
    ) {
      stderr.write(`error: ${err.message}\n`);
      return 1;
    }
    stderr.write(`error: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  } finally {
    await services.stop();
    await db.destroy();
  }
}
