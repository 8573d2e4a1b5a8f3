import os from 'node:os';
import path from 'node:path';
import proxyAddr from 'proxy-addr';
import { z } from 'zod';
import { ConfigError } from './config-error.js';
import { type DatabaseKind, databaseKindOf } from './db/dialect.js';
import { DEFAULT_POOL_SIZE } from './db/knex.js';

/**
 * Whole numbers as operators write them: digits, perhaps after a minus (which the range then
 * refuses in its own words), spaces around them ignored. Number() (z.coerce) reads a blank
 * value as 0, and `0x10` or `1e3` as numbers, so `PORT=" "` would listen on a random port.
 */
const envWhole = (error: string, range: z.ZodNumber = z.number()) =>
  z
    .string()
    .trim()
    .regex(/^-?\d+$/, { error })
    .transform(Number)
    .pipe(range);

/** Booleans as operators write them in env files. */
const envBoolean = z.enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'must be true or false' }).transform((value) => value === 'true' || value === '1' || value === 'yes');

/** `all`: HTTP and background work; `web`: HTTP only; `worker`: background work only, no port. */
const PROCESS_ROLES = ['all', 'web', 'worker'] as const;
export type ProcessRole = (typeof PROCESS_ROLES)[number];

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const envSchema = z.object({
  PORT: envWhole('must be a port number', z.number().min(0).max(65535)).default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().min(1).default('./data'),
  // A SQLite file (the default: <DATA_DIR>/scribe.sqlite) or a postgres:// URL. Anything else
  // with a scheme (mysql://, file:, a mistyped postgres:/) is refused, not made a file of that name.
  DATABASE_URL: z
    .string()
    .min(1)
    .refine((value) => databaseKindOf(value) === 'postgres' || !/^[a-z][a-z0-9+.-]+:/i.test(value), 'must be a SQLite file path or a postgres:// URL')
    .optional(),
  // Connections each process keeps to PostgreSQL (docs/deploy.md); SQLite uses one.
  DATABASE_POOL_SIZE: envWhole('must be a whole number', z.number().min(1).max(1000)).default(DEFAULT_POOL_SIZE),
  // Server processes `npm start` runs, sharing PORT; and what each process does.
  WEB_CONCURRENCY: envWhole('must be a whole number', z.number().min(1).max(256)).default(1),
  PROCESS_ROLE: z.enum(PROCESS_ROLES, { error: `must be one of ${PROCESS_ROLES.join(', ')}` }).default('all'),
  SESSION_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
  // The key that seals stored secrets (secrets/secret-box.ts); unset: generated once and kept in DATA_DIR.
  SECRETS_KEY: z
    .string()
    .refine((value) => /^[A-Za-z0-9+/_-]+={0,2}$/.test(value) && Buffer.from(value, 'base64').length === 32, 'must be 32 bytes in base64 (openssl rand -base64 32)')
    .optional(),
  ATTACHMENTS_ALLOW_PRIVATE: envBoolean.default(false),
  // Outbound webhooks may reach private and local addresses (an install whose receivers are inside its network).
  WEBHOOKS_ALLOW_PRIVATE: envBoolean.default(false),
  // Scribes' own model endpoints may be private or local addresses (a team with a model server on its own network).
  MODELS_ALLOW_PRIVATE: envBoolean.default(false),
  RATE_LIMIT_PER_MINUTE: envWhole('must be a whole number', z.number().min(0)).default(600),
  METRICS_TOKEN: z.string().min(1).optional(),
  // As Express's `trust proxy` takes it, checked by the parser Express uses (proxy-addr).
  TRUST_PROXY: z
    .string()
    .min(1)
    .transform(parseTrustProxy)
    .refine(isTrustProxy, 'must be true, false, a number of hops, or addresses and subnets (loopback, 10.0.0.0/8, …) separated by commas')
    .default(false),
  // The console's address as staff reach it (https://scribe.example.com): invitation and reset links are made absolute with it.
  PUBLIC_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  LOG_LEVEL: z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(', ')}` }).default('info'),
  // JSON lines for machines; `pretty` (pino-pretty, a dev dependency) for people, the default under NODE_ENV=development.
  LOG_FORMAT: z.enum(['json', 'pretty'], { error: 'must be json or pretty' }).optional(),
  NODE_ENV: z.string().optional(),
  // The openai agent: any OpenAI-compatible Chat Completions endpoint (docs/agents.md).
  OPENAI_BASE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).default('https://api.openai.com/v1'),
  OPENAI_API_KEY: z.string().min(1).optional(),
  OPENAI_MODEL: z.string().min(1).optional(),
  OPENAI_TIMEOUT_MS: envWhole('must be a whole number of milliseconds', z.number().min(100)).default(60_000),
  // Data care, off by default (docs/deploy.md).
  RETENTION_SESSION_DAYS: envWhole('must be a whole number of days', z.number().min(1)).optional(),
  RETENTION_ORPHAN_FILES: envBoolean.default(false),
  OPENAI_MAX_RETRIES: envWhole('must be a whole number', z.number().min(0).max(10)).default(2),
  // Worker threads that read entry pages (entries/read-workers.ts); 0 reads in the server's thread.
  READ_THREADS: envWhole('must be a whole number', z.number().min(0).max(64)).optional(),
  // How long a client may take to send its headers, and its whole request (docs/deploy.md).
  HTTP_HEADERS_TIMEOUT_MS: envWhole('must be a whole number of milliseconds', z.number().min(100)).default(20_000),
  HTTP_REQUEST_TIMEOUT_MS: envWhole('must be a whole number of milliseconds', z.number().min(100)).default(30_000),
  // Agent runs (tasks and session answers) in flight at once in one process: sized by model time, not CPU (docs/deploy.md).
  AGENT_CONCURRENCY: envWhole('must be a whole number', z.number().min(1, 'must be from 1 to 10000').max(10_000, 'must be from 1 to 10000')).default(100),
  // On SIGTERM, how long running agent work may go on before it is stopped and handed back (docs/deploy.md).
  SHUTDOWN_TIMEOUT_MS: envWhole('must be a whole number of milliseconds', z.number().min(0).max(600_000)).default(10_000),
  // The email channels' SMTP listener (channels/smtp.ts): none unless SMTP_PORT is set.
  SMTP_PORT: envWhole('must be a port number', z.number().min(0).max(65535)).optional(),
  SMTP_HOST: z.string().min(1).default('127.0.0.1'),
  // Connections the SMTP listener takes at once; one more is answered 421.
  SMTP_MAX_CONNECTIONS: envWhole('must be a whole number', z.number().min(1).max(10_000)).default(50),
});

/**
 * One thread per core the server's own thread leaves, at most four (more would wait on the
 * server's thread anyway), and at least two, so that one long search does not hold up the
 * next page: while one thread works a search, the other serves pages.
 */
function defaultReadThreads(): number {
  return Math.min(4, Math.max(2, os.availableParallelism() - 1));
}

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  /** The database: a SQLite file's absolute path, or a PostgreSQL URL. */
  readonly databaseUrl: string;
  readonly databaseKind: DatabaseKind;
  readonly databasePoolSize: number;
  readonly webConcurrency: number;
  readonly processRole: ProcessRole;
  /** Unset means: generated once and kept in the data directory (see server start). */
  readonly sessionSecret: string | undefined;
  /** 32 bytes in base64; unset means: generated once and kept in the data directory (see server start). */
  readonly secretsKey: string | undefined;
  readonly attachmentsAllowPrivate: boolean;
  readonly webhooksAllowPrivate: boolean;
  /** Whether a base URL a scribe sets for itself may reach non-public addresses; the environment's is trusted as set. */
  readonly modelsAllowPrivate: boolean;
  readonly rateLimitPerMinute: number;
  readonly metricsToken: string | undefined;
  /** Passed to Express's `trust proxy` as is: a boolean, a hop count or a list of addresses. */
  readonly trustProxy: boolean | number | string;
  /** The console's address as staff reach it, without a trailing slash; unset: links are paths (`/invite/<token>`). */
  readonly publicUrl: string | undefined;
  readonly logLevel: (typeof LOG_LEVELS)[number];
  readonly logFormat: 'json' | 'pretty';
  /** Console templates compiled once, at their first render; off under NODE_ENV=development, so edited views show at once. */
  readonly cacheViews: boolean;
  readonly openai: OpenAiConfig;
  readonly retention: RetentionConfig;
  /** Worker threads that read entry pages; 0 reads them in the server's thread (always, on PostgreSQL, whose reads do not block it). */
  readonly readThreads: number;
  readonly http: HttpConfig;
  /** Agent runs in flight at once in this process. */
  readonly agentConcurrency: number;
  /** On SIGTERM: how long running work may go on, after claiming stops, before it is stopped and handed back. */
  readonly shutdownTimeoutMs: number;
  /** Where the SMTP listener of email channels listens, and how many connections it takes at once; undefined (SMTP_PORT unset): no listener. */
  readonly smtp: { readonly port: number; readonly host: string; readonly maxConnections: number } | undefined;
}

export interface HttpConfig {
  /** A client that has not sent all its headers by then gets 408 and is disconnected (slow clients hold sockets). */
  readonly headersTimeoutMs: number;
  /** Likewise for the whole request, body included (1 MiB at most). The answer may take longer. */
  readonly requestTimeoutMs: number;
}

export interface RetentionConfig {
  /** Finished (completed or failed) sessions untouched this many days are deleted with their transcripts; unset keeps them. */
  readonly sessionDays: number | undefined;
  /** Attachment files no receipt refers to any more are deleted. */
  readonly orphanFiles: boolean;
}

export interface OpenAiConfig {
  readonly baseUrl: string;
  readonly apiKey: string | undefined;
  /** Unset: scribes with the openai agent fail their work with a message saying so. */
  readonly model: string | undefined;
  /** Per HTTP call; timed-out calls count as failures and are retried. */
  readonly timeoutMs: number;
  /** Retries after a 408/409/429/5xx answer, a timeout or a broken connection, with backoff. */
  readonly maxRetries: number;
}

export { ConfigError };

/** Reads and validates the environment once; no other module reads `process.env`. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // Empty strings in env files mean "not set".
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`Invalid configuration: ${issue.path.join('.')} ${issue.message}`);
  }
  const e = parsed.data;
  const dataDir = path.resolve(e.DATA_DIR);
  const databaseUrl = e.DATABASE_URL ?? path.join(dataDir, 'scribe.sqlite');
  const databaseKind = databaseKindOf(databaseUrl);
  return Object.freeze({
    port: e.PORT,
    host: e.HOST,
    dataDir,
    databaseUrl: databaseKind === 'sqlite' ? path.resolve(databaseUrl) : databaseUrl,
    databaseKind,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    webConcurrency: e.WEB_CONCURRENCY,
    processRole: e.PROCESS_ROLE,
    sessionSecret: e.SESSION_SECRET,
    secretsKey: e.SECRETS_KEY,
    attachmentsAllowPrivate: e.ATTACHMENTS_ALLOW_PRIVATE,
    webhooksAllowPrivate: e.WEBHOOKS_ALLOW_PRIVATE,
    modelsAllowPrivate: e.MODELS_ALLOW_PRIVATE,
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    metricsToken: e.METRICS_TOKEN,
    trustProxy: e.TRUST_PROXY,
    publicUrl: e.PUBLIC_URL?.replace(/\/+$/, ''),
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT ?? (e.NODE_ENV === 'development' ? 'pretty' : 'json'),
    cacheViews: e.NODE_ENV !== 'development',
    retention: Object.freeze({ sessionDays: e.RETENTION_SESSION_DAYS, orphanFiles: e.RETENTION_ORPHAN_FILES }),
    readThreads: databaseKind === 'postgres' ? 0 : (e.READ_THREADS ?? defaultReadThreads()),
    // Node wants the headers' limit no larger than the request's.
    smtp: e.SMTP_PORT === undefined ? undefined : Object.freeze({ port: e.SMTP_PORT, host: e.SMTP_HOST, maxConnections: e.SMTP_MAX_CONNECTIONS }),
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    agentConcurrency: e.AGENT_CONCURRENCY,
    http: Object.freeze({ headersTimeoutMs: Math.min(e.HTTP_HEADERS_TIMEOUT_MS, e.HTTP_REQUEST_TIMEOUT_MS), requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS }),
    openai: Object.freeze({
      baseUrl: e.OPENAI_BASE_URL,
      apiKey: e.OPENAI_API_KEY,
      model: e.OPENAI_MODEL,
      timeoutMs: e.OPENAI_TIMEOUT_MS,
      maxRetries: e.OPENAI_MAX_RETRIES,
    }),
  });
}

/** Whether Express can take the value: a list of addresses is compiled as Express compiles it. */
function isTrustProxy(value: boolean | number | string): boolean {
  if (typeof value !== 'string') return true;
  try {
    proxyAddr.compile(value.split(',').map((part) => part.trim()));
    return true;
  } catch {
    return false;
  }
}

function parseTrustProxy(value: string): boolean | number | string {
  if (value === 'true') return true;
  if (value === 'false') return false;
  if (/^\d+$/.test(value)) return Number(value);
  return value;
}
