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
import { newRequestId } from '../../src/lib/ids.js';
import type { Db } from '../../src/db/knex.js';
import { machineLine, startServer, writeSection } from './lib.js';

const SAMPLES = 50;
/** Receipts added to the demo organization for the "busy" rows: the dashboard must stay cheap as they grow. */
const BUSY_RECEIPTS = 100_000;

export async function benchConsole(dataDir: string): Promise<void> {
  const config = loadConfig({ DATA_DIR: dataDir });
  const db = openDatabase(config.databaseUrl, { poolSize: config.databasePoolSize });
  await migrateToLatest(db);
  const demo = await seed((options) => createServices({ config, db, logger: createLogger('silent'), options }));
  const receipt = await db('requests').orderBy('created_at', 'desc').first('id');
  const entry = await db('entries').where({ entry_type_id: DEMO_ENTRY_TYPES.contacts }).first('id');

  const rows: string[] = [];
  await measure(dataDir, demo, rows, [
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
  ]);
  // Then the pages that read receipts by time, with an organization's day of busy traffic.
  await addFinishedReceipts(db, demo.organizationId, BUSY_RECEIPTS);
  await db.destroy();
  await measure(dataDir, demo, rows, [
    [`dashboard, ${BUSY_RECEIPTS.toLocaleString('en')} receipts in the last day`, '/'],
    [`scribe page, the same`, '/b/atlas'],
    [`receipts, the same`, '/receipts'],
  ]);
  writeSection('console', [
    '## Console pages (demo data)',
    '',
    `One run: ${machineLine()}; signed in as the demo admin; ${SAMPLES} sequential requests per page after 5 warm-ups, time to the last byte on loopback.`,
    `The last rows add ${BUSY_RECEIPTS.toLocaleString('en')} finished receipts to the demo organization's \`atlas\`, spread over the last 24 hours.`,
    '',
    '| page | path | p50 ms | max ms |',
    '|---|---|---:|---:|',
    ...rows,
    '',
    'Target (issue 5): no page over 100 ms server time on the demo data.',
  ]);
}

/** Times each page on a server started on the data; appends a table row per page to `rows`. */
async function measure(dataDir: string, demo: { email: string; password: string }, rows: string[], pages: Array<[string, string]>): Promise<void> {
  const server = await startServer(['dist/main.js'], { DATA_DIR: dataDir, LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '0', SESSION_SECRET: 'bench-session-secret-0123456789' });
  try {
    const cookie = await signIn(server.url, demo.email, demo.password);
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
}

/**
 * `count` receipts of the organization's `atlas`, created evenly over the last 24 hours, all
 * finished (so the bench server's dispatcher has nothing to do): 1 in 20 failed, the rest
 * fulfilled a few milliseconds to seconds after their 202.
 */
async function addFinishedReceipts(db: Db, organizationId: string, count: number): Promise<void> {
  const scribe = await db('scribes').where({ organization_id: organizationId, slug: 'atlas' }).first('id');
  const now = Date.now();
  const rows = [];
  for (let i = 0; i < count; i++) {
    const created = new Date(now - 86_400_000 + Math.floor((i * 86_400_000) / count));
    const completed = new Date(created.getTime() + 2 + ((i * 7919) % 3000)).toISOString();
    const failed = i % 20 === 0;
    rows.push({
      id: newRequestId(created),
      organization_id: organizationId,
      scribe_id: scribe.id,
      status: failed ? 'failed' : 'fulfilled',
      entity_type: 'task',
      error_message: failed ? 'Bench failure' : null,
      title: `Bench receipt ${i}`,
      summary: 'A receipt of the busy-organization bench.',
      available_at: completed,
      attempts: 1,
      dispatched_at: completed,
      completed_at: completed,
      created_at: created.toISOString(),
      updated_at: completed,
    });
  }
  for (let i = 0; i < rows.length; i += 500) await db('requests').insert(rows.slice(i, i + 500));
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
