import { startPostgresCluster } from './helpers/postgres-cluster.js';
const kind = process.env.TEST_DATABASE;
let cluster;
if (kind === 'postgres') { cluster = await startPostgresCluster(); process.env.TEST_POSTGRES_URL = cluster.url; }
const { createHarness } = await import('./helpers/harness.js');
const { createServices } = await import('../src/services.js');
const { createLogger } = await import('../src/logger.js');
const { seed } = await import('../seeds/demo.js');
for (let i = 0; i < 1; i++) {
  const h = await createHarness();
  const counts = new Map<string, number>(); let n = 0;
  h.db.on('query', (q: any) => { n++; const k = String(q.sql).replace(/\s+/g,' ').slice(0, 90); counts.set(k, (counts.get(k) ?? 0) + 1); });
  const c0 = process.cpuUsage(); const t0 = Date.now();
  await seed((options) => createServices({ config: h.config, db: h.db, logger: createLogger('silent'), options }), { realNow: () => Date.now() });
  const c = process.cpuUsage(c0);
  console.log(kind, 'seed', Date.now() - t0, 'ms wall', Math.round((c.user + c.system) / 1000), 'ms cpu (this process)');
  console.log('queries', n); console.log([...counts].sort((a, b) => b[1] - a[1]).slice(0, 25).map(([k, v]) => `${v} ${k}`).join('\n'));
  await h.close();
}
await cluster?.stop(); process.exit(0);
