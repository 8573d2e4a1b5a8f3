import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { openDatabase } from './db/knex.js';
import { dialectOf } from './db/dialect.js';
import { migrateAtStart } from './db/migrate.js';
import { openSecretBox } from './secrets/keys.js';
import { createServices, type ServiceOptions, type Services } from './services.js';
import { createApp } from './app.js';
import { resolveSessionSecret } from './console/session-secret.js';
import type { SmtpListener } from './channels/smtp.js';

/** How long in-flight requests get to finish on shutdown before their connections are cut. */
export const DRAIN_TIMEOUT_MS = 10_000;
const CONNECTIONS_CHECK_MS = 1000;

export interface RunningServer {
  /** Where it listens; undefined for a worker (PROCESS_ROLE=worker), which does not. */
  url: string | undefined;
  /** The email channels' SMTP port, when SMTP_PORT is set (and the process serves). */
  smtpPort: number | undefined;
  stop(): Promise<void>;
}

/**
 * The only place that opens the database, migrates, starts background jobs and listens.
 * PROCESS_ROLE says which of the two a process does: `web` only serves HTTP, `worker`
 * only works the queues and jobs, `all` both. `stop()` undoes it in order: stop ticking,
 * finish in-flight requests, close the database.
 */
export async function startServer(config: Config, logger: Logger, options: ServiceOptions = {}): Promise<RunningServer> {
  const serves = config.processRole !== 'worker';
  const works = config.processRole !== 'web';
  const secrets = openSecretBox(config);
  const db = openDatabase(config.databaseUrl, { poolSize: config.databasePoolSize });
  try {
    await migrateAtStart(db, config.databaseUrl, { secrets });
  } catch (err) {
    await db.destroy();
    throw err;
  }
  if (works) await dialectOf(db).optimizeAtStart(db);
  // A web process leaves new work to the workers, which its NOTIFY (or their polling) wakes.
  const services = createServices({ config, db, logger, secrets, options: works ? options : { ...options, dispatchOnAccept: false, runOnNewWork: false } });
  let server: http.Server | undefined;
  let smtp: SmtpListener | undefined;
  try {
    server = serves ? await listen(config, createApp({ config, logger, services, sessionSecret: resolveSessionSecret(config.sessionSecret, config.dataDir) })) : undefined;
    smtp = serves && config.smtp ? await startSmtp(config.smtp, services, logger) : undefined;
  } catch (err) {
    if (server) await closeServer(server);
    await services.stop();
    await db.destroy();
    throw err;
  }
  const url = server && urlOf(server, config);

  if (works) {
    // Work left behind by an earlier run is picked up straight away.
    await services.background.start();
  }
  if (url) logger.info({ url, smtpPort: smtp?.port, role: config.processRole }, 'scribe is listening');
  else logger.info({ role: config.processRole }, 'scribe worker started');

  let stopping: Promise<void> | undefined;
  return {
    url,
    smtpPort: smtp?.port,
    stop() {
      stopping ??= (async () => {
        // Claiming stops at once; work under way may finish for SHUTDOWN_TIMEOUT_MS, then is handed back.
        const drained = services.background.stop({ drainMs: config.shutdownTimeoutMs });
        if (server) await closeServer(server);
        await smtp?.close();
        await drained;
        await services.stop();
        await db.destroy();
        logger.info('scribe stopped');
      })();
      return stopping;
    },
  };
}

async function listen(config: Config, app: http.RequestListener): Promise<http.Server> {
  const server = http.createServer(
    {
      headersTimeout: config.http.headersTimeoutMs,
      requestTimeout: config.http.requestTimeoutMs,
      // How often Node looks for requests past those limits (its default, 30 s, would let them overrun that much).
      connectionsCheckingInterval: CONNECTIONS_CHECK_MS,
    },
    app,
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(new ListenError('PORT', 'HOST', config.port, config.host, err)));
    server.listen(config.port, config.host, () => resolve());
  });
  return server;
}

/**
 * The email channels' SMTP listener. The SMTP server and the MIME parsers load here, only
 * where SMTP_PORT is set, rather than at every start, of which they are a large share.
 */
async function startSmtp(smtp: NonNullable<Config['smtp']>, services: Services, logger: Logger): Promise<SmtpListener> {
  const { startSmtpListener } = await import('./channels/smtp.js');
  return startSmtpListener({
    host: smtp.host,
    port: smtp.port,
    limits: { maxConnections: smtp.maxConnections },
    channels: services.channels,
    store: services.attachmentStore,
    logger,
  }).catch((err) => Promise.reject(new ListenError('SMTP_PORT', 'SMTP_HOST', smtp.port, smtp.host, err)));
}

/**
 * Throws the ListenError `startServer` would, if the server's port (or the SMTP listener's)
 * is taken now: for a start that does long work before it listens (the demo's seed).
 */
export async function checkPortsFree(config: Config): Promise<void> {
  const ports: Array<[port: number, host: string, portVariable: string, hostVariable: string]> = [[config.port, config.host, 'PORT', 'HOST']];
  if (config.smtp) ports.push([config.smtp.port, config.smtp.host, 'SMTP_PORT', 'SMTP_HOST']);
  for (const [port, host, portVariable, hostVariable] of ports) {
    const probe = http.createServer();
    await new Promise<void>((resolve, reject) => {
      probe.once('error', (err) => reject(new ListenError(portVariable, hostVariable, port, host, err)));
      probe.listen(port, host, () => probe.close(() => resolve()));
    });
  }
}

/**
 * A port the server could not listen on, in one line that names the variable to change
 * (`npm start` and `npm run demo` print it instead of a stack trace).
 */
export class ListenError extends Error {
  override name = 'ListenError';
  constructor(portVariable: string, hostVariable: string, port: number, host: string, cause: unknown) {
    const code = (cause as NodeJS.ErrnoException | undefined)?.code;
    super(
      code === 'EADDRINUSE'
        ? `Cannot listen on ${host}:${port}: the port is in use. Stop what uses it, or set ${portVariable} to a free port (for example ${portVariable}=${port + 1}).`
        : code === 'EACCES'
          ? `Cannot listen on ${host}:${port}: this user may not use ports below 1024. Set ${portVariable} to 1024 or above (the default is 3000), or put a proxy in front.`
          : code === 'EADDRNOTAVAIL'
            ? `Cannot listen on ${host}:${port}: ${host} is not an address of this machine. Set ${hostVariable} to one of its addresses (127.0.0.1, or 0.0.0.0 for all).`
            : `Cannot listen on ${host}:${port}: ${(cause as Error)?.message ?? cause}. Check ${portVariable} and ${hostVariable}.`,
      { cause },
    );
  }
}

function urlOf(server: http.Server, config: Config): string {
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return `http://${host}:${port}`;
}

async function closeServer(server: http.Server): Promise<void> {
  // Answers from now on tell keep-alive clients to hang up, so busy connections end after
  // their current request instead of holding the drain open until the timeout.
  server.on('request', (_req: http.IncomingMessage, res: http.ServerResponse) => res.setHeader('Connection', 'close'));
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const timer = setTimeout(() => server.closeAllConnections(), DRAIN_TIMEOUT_MS);
  await closed;
  clearTimeout(timer);
}
