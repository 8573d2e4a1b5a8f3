import { startPostgresCluster, type PostgresCluster } from './postgres-cluster.js';

// Mocha global fixtures: a plain `mocha` run with TEST_DATABASE=postgres gets its own
// cluster; test/run-suites.ts starts one cluster itself and passes TEST_POSTGRES_URL.
let cluster: PostgresCluster | undefined;

export async function mochaGlobalSetup(): Promise<void> {
  if (process.env.TEST_DATABASE !== 'postgres' || process.env.TEST_POSTGRES_URL) return;
  cluster = await startPostgresCluster();
  process.env.TEST_POSTGRES_URL = cluster.url;
}

export async function mochaGlobalTeardown(): Promise<void> {
  if (!cluster) return;
  const started = cluster;
  cluster = undefined;
  delete process.env.TEST_POSTGRES_URL;
  await started.stop();
}
