import { ConfigError, loadConfig, type Config } from './config.js';
import { createLogger, type Logger } from './logger.js';
import { checkPortsFree, ListenError, startServer, type RunningServer } from './server.js';
import type { Db } from './db/knex.js';
import { migrateAtStart } from './db/migrate.js';
import { DatabaseUnreachableError } from './db/open-failure.js';
import { openSecretBox } from './secrets/keys.js';
import type { SecretBox } from './secrets/secret-box.js';

/** Reads the configuration for an entry point, or ends the process naming the bad variable. */
export function configOrExit(): Config {
  try {
    return loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

/** The install's secret box, or the end of the process saying what is wrong with its key. */
export function secretBoxOrExit(config: Config): SecretBox {
  try {
    return openSecretBox(config);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

export function processLogger(config: Config): Logger {
  return createLogger(config.logLevel, { pretty: config.logFormat === 'pretty' });
}

/**
 * SIGTERM and SIGINT stop the server gracefully; a second signal exits at once. Called before
 * the server starts, and handed the server once it is up: a signal sent the moment the server
 * says it listens (a supervisor's, a script's) would otherwise meet the default action, which
 * ends the process on the spot. One that comes while it starts stops it as soon as it is up.
 */
export function stopOnSignals(logger: Logger): (server: RunningServer) => void {
  let server: RunningServer | undefined;
  let signalled: NodeJS.Signals | undefined;
  const stop = (running: RunningServer, signal: NodeJS.Signals) => {
    logger.info({ signal }, 'shutting down');
    running.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) process.exit(1);
    signalled = signal;
    if (server) stop(server, signal);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return (started) => {
    server = started;
    if (signalled) stop(started, signalled);
  };
}

/**
 * Starts the server; a port it cannot listen on, or a secrets key other than the database's,
 * ends the process with one line that says what to change.
 */
export async function startOrExit(config: Config, logger: Logger): Promise<RunningServer> {
  return orExit(() => startServer(config, logger));
}

/** Migrates the database, or ends the process in one line, as `startOrExit` would, when it cannot be reached or opened. */
export async function migrateOrExit(db: Db, config: Config, secrets: SecretBox): Promise<void> {
  await orExit(() => migrateAtStart(db, config.databaseUrl, { secrets }));
}

/** Exits at once, as `startOrExit` would, when the ports the server will listen on are taken (before long work at start). */
export async function portsFreeOrExit(config: Config): Promise<void> {
  await orExit(() => checkPortsFree(config));
}

/** What a port that cannot be listened on, a bad setting or a database out of reach ends in: one line on stderr and exit 1, not a stack trace. */
async function orExit<T>(start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (err) {
    if (!(err instanceof ListenError || err instanceof ConfigError || err instanceof DatabaseUnreachableError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
}
