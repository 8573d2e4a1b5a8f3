import { parseArgs } from 'node:util';
import { loadConfig, ConfigError } from '../config.js';
import { createLogger } from '../logger.js';
import { openDatabase } from '../db/knex.js';
import { migrateToLatest } from '../db/migrate.js';
import { createServices } from '../services.js';
import { HttpError } from '../http/errors.js';
import { BackupNotSupportedError } from '../db/dialect.js';
import { CopyRefusedError } from '../db/copy.js';
import { FLAGS, UsageError, commands, usage } from './commands.js';

/**
 * `npm run --silent admin -- <command> [--flags]`: prints exactly one JSON object on stdout
 * and exits 0, or a message on stderr and a non-zero exit.
 */
export async function runAdmin(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: FLAGS, allowPositionals: true, strict: true });
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n${usage()}\n`);
    return 2;
  }
  const words = parsed.positionals.join(' ');
  if (parsed.values.help && !commands[words]) {
    // `--help` alone, or after part of a command: the commands (those that start with what was given).
    const known = Object.entries(commands).filter(([name]) => name.startsWith(words));
    process.stdout.write(`${usage(known.length > 0 ? Object.fromEntries(known) : commands)}\n`);
    return 0;
  }
  const command = commands[words];
  if (command && parsed.values.help) {
    process.stdout.write(`usage: npm run --silent admin -- ${command.usage}\n`);
    return 0;
  }
  if (!command) {
    process.stderr.write(`error: unknown command "${parsed.positionals.join(' ')}"\n${usage()}\n`);
    return 2;
  }

  let config;
  try {
    config = loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`error: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  const logger = createLogger('silent');
  const db = openDatabase(config.databaseUrl, { poolSize: config.databasePoolSize });
  const services = createServices({ config, db, logger, options: { dispatchOnAccept: false, runOnNewWork: false } });
  try {
    await migrateToLatest(db);
    const output = await command.run(parsed.values, services);
    process.stdout.write(`${JSON.stringify(output)}\n`);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`error: ${err.message}\nusage: ${command.usage}\n`);
      return 2;
    }
    if (err instanceof HttpError || err instanceof BackupNotSupportedError || err instanceof CopyRefusedError) {
      process.stderr.write(`error: ${err.message}\n`);
      return 1;
    }
    process.stderr.write(`error: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  } finally {
    await services.stop();
    await db.destroy();
  }
}

process.exitCode = await runAdmin(process.argv.slice(2), process.env);
