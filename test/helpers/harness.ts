import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import supertest from 'supertest';
import type { Express } from 'express';
import { loadConfig, type Config } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/knex.js';
import { createTestDatabase, dropTestDatabase } from './databases.js';
import type { DatabaseKind } from '../../src/db/dialect.js';
import { createLogger, type Logger } from '../../src/logger.js';
import { createServices, type ServiceOptions, type Services } from '../../src/services.js';
import { createApp } from '../../src/app.js';
import type { ScribeRef } from '../../src/scribes/service.js';
import type { Actor } from '../../src/audit/service.js';
import type { ConsoleOptions } from '../../src/console/index.js';

/** A clock tests move by hand. */
export function testClock(start = '2026-11-21T09:00:00.000Z') {
  let now = Date.parse(start);
  const clock = () => new Date(now);
  return Object.assign(clock, {
    advance(ms: number) {
      now += ms;
    },
    set(iso: string) {
      now = Date.parse(iso);
    },
  });
}

export function tempDir(prefix = 'scribe-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export interface Tenant {
  organizationId: string;
  key: string;
  keyId: string;
  scribe: ScribeRef;
  /** Headers for an authenticated JSON call. */
  headers: Record<string, string>;
}

export interface Harness {
  dir: string;
  config: Config;
  db: Db;
  services: Services;
  app: Express;
  api: ReturnType<typeof supertest>;
  tenant(options?: { slug?: string; state?: string }): Promise<Tenant>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  env?: Record<string, string>;
  options?: ServiceOptions;
  consoleOptions?: ConsoleOptions;
  database?: DatabaseKind;
  /** Another harness's database: this one is a second process on it (its own services, app and feeds); it leaves the database to its owner. */
  sharedDatabaseUrl?: string;
  /** Where the app logs (silent unless given). */
  logger?: Logger;
}

/**
 * scrypt at a sixteenth of the product's cost for the passwords tests set (hundreds of users
 * signing in); the hashes record it, and the CLI's test checks the product's own.
 */
const TEST_PASSWORD_COST = { N: 1024, r: 8, p: 1 };

/** The real app on a fresh, migrated database: a SQLite file in a temp folder, or a PostgreSQL database (helpers/databases.ts). */
export async function createHarness({
  env = {},
  options = {},
  consoleOptions,
  database,
  sharedDatabaseUrl,
  logger = createLogger('silent'),
}: HarnessOptions = {}): Promise<Harness> {
  const dir = tempDir();
  const databaseUrl = sharedDatabaseUrl ?? (await createTestDatabase(dir, { kind: database }));
  // Limits off unless a test turns them on: suites make thousands of calls with one key.
  // Entry reads in this thread unless a test of them asks for threads (READ_THREADS: '2',
  // as on a 2-core machine): a harness's threads each load the app and open the database,
  // and most tests read a few entries, or none.
  const config = loadConfig({ DATA_DIR: dir, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '0', READ_THREADS: '0', ...env });
  const db = openDatabase(config.databaseUrl, { poolSize: config.databasePoolSize });
  const services = createServices({ config, db, logger, options: { passwordCost: TEST_PASSWORD_COST, ...options } });
  const app = createApp({ config, logger, services, sessionSecret: 'test-session-secret-of-some-length', consoleOptions });
  let tenants = 0;

  return {
    dir,
    config,
    db,
    services,
    app,
    api: supertest(app),
    async tenant({ slug = 'atlas', state = 'active' } = {}) {
      tenants++;
      const org = await services.organizations.createOrganization({ name: `Org ${tenants}` });
      const { id: keyId, key } = await services.organizations.createApiKey({ organizationId: org.id });
      const scribe = await services.scribes.create({ organizationId: org.id, slug, name: slug, state });
      return { organizationId: org.id, key, keyId, scribe, headers: { 'X-Api-Key': key } };
    },
    async close() {
      await services.stop();
      await db.destroy();
      if (!sharedDatabaseUrl) await dropTestDatabase(databaseUrl);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A console user of the tenant's organization, as the audit log names them. */
export function staffOf(t: { organizationId: string }): Actor {
  return { type: 'user', id: '01935f00-0000-7000-8000-00000000057a', label: 'staff@example.com', organizationId: t.organizationId };
}

/**
 * Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. The
 * default is patience for a loaded machine, not a bound any test asserts: a test of how soon
 * something happens passes its own.
 */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
