/**
 * Console pages on the demo data: server time per page, signed in as the demo admin.
 * Sequential requests on loopback (no concurrency), so each time is one page's own cost.
 */
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/knex.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { createLogger } from '../../src/logger.js';
import { createServices } from '../../src/services.js';
import { DEMO_ENTRY_TYPES, seed } from '../../seeds/demo.js';
import { machineLine, startServer, writeSection } from './lib.js';

const SAMPLES = 50;

export async function benchConsole(dataDir: string): Promise<void> {
  const config = loadConfig({ DATA_DIR: dataDir });
  const db = openDatabase(config.databaseUrl, { poolSize: config.databasePoolSize });
  await migrateToLatest(db);
  const services = createServices({ config, db, logger: createLogger('silent'), options: { runOnNewWork: false } });
  const demo = await seed(services);
  const receipt = await db('requests').orderBy('created_at', 'desc').first('id');
  const entry = await db('entries').where({ entry_type_id: DEMO_ENTRY_TYPES.contacts }).first('id');
  await services.stop();
  await db.destroy();

  const server = await startServer(['dist/src/main.js'], { DATA_DIR: dataDir, LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '0', SESSION_SECRET: 'bench-session-secret-0123456789' });
  const rows: string[] = [];
  try {
    const cookie = await signIn(server.url, demo.email, demo.password);
    const pages: Array<[string, string]> = [
      ['dashboard', '/'],
      ['scribes', '/scribes'],
      ['scribe page', '/b/atlas'],
      ['receipts', '/receipts'],
      ['receipt page', `/receipts/${receipt.id}`],
      ['tasks', '/tasks'],
      ['entry types', '/entry-types'],
      ['entries of a type (50)', `/entry-types/${DEMO_ENTRY_TYPES.companies}`],
      ['entries, searched', `/entry-types/${DEMO_ENTRY_TYPES.companies}?q=City%3AZurich`],
      ['entry page', `/entries/${entry.id}`],
      ['API keys', '/keys'],
      ['audit log', '/audit'],
    ];
    for (const [name, path] of pages) {
      const times: number[] = [];
      for (let i = 0; i < SAMPLES + 5; i++) {
        const started = process.hrtime.bigint();
        const res = await fetch(`${server.url}${path}`, { headers: { cookie }, redirect: 'manual' });
        await res.text();
        if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
        if (i >= 5) times.push(Number(process.hrtime.bigint() - started) / 1e6);
      }
      times.sort((a, b) => a - b);
      const [p50, max] = [times[Math.floor(SAMPLES / 2)]!, times.at(-1)!];
      console.log(`${name.padEnd(28)} p50 ${p50.toFixed(1)} ms  max ${max.toFixed(1)} ms`);
      rows.push(`| ${name} | \`${path.replace(/[0-9a-f-]{36}|req_\w+/g, '…')}\` | ${p50.toFixed(1)} | ${max.toFixed(1)} |`);
    }
  } finally {
    await server.stop();
  }
  writeSection('console', [
    '## Console pages (demo data)',
    '',
    `One run: ${machineLine()}; signed in as the demo admin; ${SAMPLES} sequential requests per page after 5 warm-ups, time to the last byte on loopback.`,
    '',
    '| page | path | p50 ms | max ms |',
    '|---|---|---:|---:|',
    ...rows,
    '',
    'Target (issue 5): no page over 100 ms server time on the demo data.',
  ]);
}

/** Signs in through the form as a browser would: the CSRF token from the page, the session cookie kept. */
async function signIn(url: string, email: string, password: string): Promise<string> {
  const page = await fetch(`${url}/login`);
  const cookie = page.headers.get('set-cookie')!.split(';')[0]!;
  const token = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1]!;
  const res = await fetch(`${url}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: token, email, password }),
  });
  if (res.status !== 303) throw new Error(`sign-in answered ${res.status}`);
  return res.headers.get('set-cookie')!.split(';')[0]!;
}
