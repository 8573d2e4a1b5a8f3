import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/knex.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { createLogger } from '../../src/logger.js';
import { createServices } from '../../src/services.js';
import type { DatabaseKind } from '../../src/db/dialect.js';
import { createTestInstall, type TestInstall } from './databases.js';

/**
 * Prepares a data dir as an operator would with the admin CLI: a migrated database with
 * one organization, API key and active scribe `slug`. Close it before a server opens the dir.
 * `install.env` starts processes on it. `kind` defaults to the suite's database.
 */
export async function provision(dataDir: string, slug = 'atlas', { kind }: { kind?: DatabaseKind } = {}) {
  const install: TestInstall = await createTestInstall(dataDir, { kind });
  const config = loadConfig(install.env);
  const db = openDatabase(config.databaseUrl, { poolSize: config.databasePoolSize });
  await migrateToLatest(db);
  const services = createServices({ config, db, logger: createLogger('silent'), options: { dispatchOnAccept: false, runOnNewWork: false } });
  const org = await services.organizations.createOrganization({ name: 'Provisioned' });
  const { key } = await services.organizations.createApiKey({ organizationId: org.id });
  const scribe = await services.scribes.create({ organizationId: org.id, slug, name: slug });
  return {
    db,
    services,
    key,
    scribe,
    organizationId: org.id,
    install,
    env: install.env,
    async close() {
      await services.stop();
      await db.destroy();
    },
  };
}
