import { buildIfStale } from './build.js';
import { startPostgresCluster, type PostgresCluster } from './postgres-cluster.js';

// Mocha global fixtures: dist/ current for the processes tests start (helpers/process.ts),
// and for a plain `mocha` run with TEST_DATABASE=postgres a cluster of its own;
// test/run-suites.ts builds and starts one cluster itself, and passes TEST_POSTGRES_URL.
let cluster: PostgresCluster | undefined;

export async function mochaGlobalSetup(): Promise<void> {
  buildIfStale();
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
