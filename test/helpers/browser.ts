import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createHarness, type Harness, type HarnessOptions, type Tenant } from './harness.js';
import { PASSWORD } from './console.js';
import { createLogger } from '../../src/logger.js';
import type { EntryInput } from '../../src/entries/entry-service.js';

/**
 * The browser the console's tests drive: Debian's build of Chromium's headless shell
 * (`apt-get install -y chromium-headless-shell`, as .ci/run does), the same engine as the
 * browser without its user interface's processes, as Playwright runs headless Chromium by
 * default. It takes a third of the full browser's CPU to open and load pages, and the suite
 * opens hundreds. TEST_CHROMIUM=/usr/bin/chromium runs them in the full browser instead.
 */
export const CHROMIUM = process.env.TEST_CHROMIUM ?? '/usr/bin/chromium-headless-shell';
/** Debian's full Chromium (`apt-get install -y chromium`), in which the demo's tests show it as a reader's browser does. */
export const FULL_CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = fileURLToPath(new URL('../../test-artifacts/screenshots/', import.meta.url));
/**
 * TEST_SCREENSHOTS=0 takes none but those of failed tests: `npm test` runs the suite once per
 * database, and each full-page picture costs the browser a few tenths of a second of CPU.
 */
const TAKE_SCREENSHOTS = process.env.TEST_SCREENSHOTS !== '0';
const LOGS = fileURLToPath(new URL('../../test-artifacts/logs/', import.meta.url));

export interface ConsoleInBrowser {
  h: Harness;
  /** The organization, with the scribe `atlas` and an admin `admin@example.com`. */
  t: Tenant;
  /** The app's address on loopback. */
  base: string;
  browser: Browser;
  /** A page at 1280 × 900, signed in as the admin. */
  page: Page;
  /** A new page, signed in as the admin, `width` px wide (390 for a phone). */
  newPage(width?: number): Promise<Page>;
  /** A call to the JSON API with the tenant's key. */
  api(method: string, route: string, body?: object): Promise<Record<string, any>>;
  /** A full-page screenshot in test-artifacts/screenshots/<name>.png, unless TEST_SCREENSHOTS=0. */
  shot(name: string, on?: Page): Promise<unknown>;
}

const browsers = new Map<string, Promise<Browser>>();

/**
 * One browser per executable for the whole mocha run, launched at its first use: each suite
 * opens pages in contexts of their own (cookies, storage and cache apart) and closes them,
 * and a launch and close cost the browser about a second of CPU. Playwright closes the
 * browsers it launched when this process exits.
 */
function sharedBrowser(executablePath: string): Promise<Browser> {
  let browser = browsers.get(executablePath);
  if (!browser) {
    browser = chromium.launch({
      executablePath,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    browsers.set(executablePath, browser);
    // A launch that failed is tried again by the next suite, not handed to it.
    browser.catch(() => browsers.delete(executablePath));
  }
  return browser;
}

/**
 * The console in a real Chromium against the real app on loopback, opened in the calling
 * `describe`'s `before` hook and closed in its `after`. Background work does not run on its
 * own: tests drive it with ticks, so each state can be watched arriving.
 */
export function consoleInBrowser(harness: HarnessOptions = {}, { executablePath = CHROMIUM }: { executablePath?: string } = {}): ConsoleInBrowser {
  let server: http.Server | undefined;
  const it = {} as ConsoleInBrowser;
  // What the app logs during each test (its requests among it), kept for a test that fails: a
  // wait in the browser that runs out says nothing of what the server did meanwhile.
  const logged: string[] = [];
  const logger = createLogger('info', { destination: { write: (line: string) => void logged.push(line) } });
  beforeEach(() => {
    logged.length = 0;
  });
  afterEach(async function () {
    const test = this.currentTest;
    if (test?.state !== 'failed') return;
    const name = test
      .fullTitle()
      .replace(/[^a-z0-9]+/gi, '-')
      .slice(0, 120);
    fs.mkdirSync(LOGS, { recursive: true });
    const file = path.join(LOGS, `${name}.log`);
    fs.writeFileSync(file, logged.join(''));
    await it.page?.screenshot({ path: path.join(SCREENSHOTS, `failed-${name}.png`), fullPage: true, timeout: 5000 }).catch(() => {});
    const last = logged.slice(-20).map((line) => `      ${line.trim()}`);
    console.error(`    The app's log during this test is in ${file}; its last lines:\n${last.join('\n')}`);
  });
  before(async function () {
    this.timeout(60_000);
    const pkg = path.basename(executablePath);
    if (!fs.existsSync(executablePath)) throw new Error(`${executablePath} is missing: install Debian's ${pkg} (apt-get install -y ${pkg}), as .ci/run does`);
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    it.h = await createHarness({ logger, ...harness, options: { runOnNewWork: false, dispatchOnAccept: false, ...harness.options } });
    it.t = await it.h.tenant({ slug: 'atlas' });
    await it.h.services.users.create({ organizationId: it.t.organizationId, email: 'admin@example.com', password: PASSWORD, role: 'admin' });
    server = http.createServer(it.h.app);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    it.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    it.browser = await sharedBrowser(executablePath);
    it.newPage = async (width = 1280) => {
      const page = await it.browser.newPage({ viewport: { width, height: 900 } });
      await signInPage(page, it.base);
      return page;
    };
    it.page = await it.newPage();
  });
  after(async () => {
    // What this suite opened goes; the browser stays for the next suite.
    await Promise.all(it.browser?.contexts().map((context) => context.close()) ?? []);
    if (server) await new Promise((resolve) => server!.close(resolve));
    await it.h?.close();
  });
  it.api = (method, route, body) =>
    fetch(`${it.base}/api/v1${route}`, { method, headers: { 'X-Api-Key': it.t.key, 'Content-Type': 'application/json' }, body: body && JSON.stringify(body) }).then(
      (r) => r.json() as Promise<Record<string, any>>,
    );
  it.shot = async (name, on) => {
    if (TAKE_SCREENSHOTS) await (on ?? it.page).screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
  };
  return it;
}

/** Signs the page in as `admin@example.com` through the login form. */
export async function signInPage(page: Page, base: string, email = 'admin@example.com'): Promise<void> {
  await page.goto(`${base}/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  const answer = page.waitForResponse((r) => r.url() === `${base}/login` && r.request().method() === 'POST');
  await page.getByRole('button', { name: 'Sign in' }).click();
  try {
    await page.waitForURL(`${base}/`);
  } catch (err) {
    // Say what the sign-in answered and where the page is, not only that it timed out.
    const status = await Promise.race([answer.then((r) => String(r.status())), new Promise<string>((resolve) => setTimeout(() => resolve('no answer'), 100))]);
    const heading = await page
      .locator('h1')
      .first()
      .textContent({ timeout: 1000 })
      .catch(() => null);
    throw new Error(
      `signing in did not reach ${base}/: POST /login answered ${status}; the page is at ${page.url()} with h1 ${JSON.stringify(heading)}\n${(err as Error).message}`,
    );
  }
}

/** Waits for `text` in `locator`; when it does not come, says what the page showed instead. */
export async function expectText(locator: ReturnType<Page['locator']>, text: string): Promise<void> {
  try {
    await locator.filter({ hasText: text }).first().waitFor({ timeout: 10_000 });
  } catch (err) {
    const page = locator.page();
    const flashes = await page
      .locator('.flash')
      .allTextContents()
      .catch(() => []);
    const heading = await page
      .locator('h1')
      .first()
      .textContent()
      .catch(() => null);
    throw new Error(`"${text}" did not appear; the page at ${page.url()} showed h1 ${JSON.stringify(heading)} and flashes ${JSON.stringify(flashes)}\n${(err as Error).message}`);
  }
}

/** The page's width against its viewport's: a table that does not fit makes the page scroll sideways. */
export async function overflowsSideways(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth + 1);
}

/**
 * Makes one of each kind of item in the browser console's organization (a receipt worked to
 * its task, a chat answered, a 'Companies' entry type with `fields` and one entry), and
 * answers their ids, for `consolePages`.
 */
export async function oneOfEach(c: ConsoleInBrowser, made: { task: Record<string, string>; message: string; fields: unknown; entry: EntryInput['fields'] }): Promise<ConsoleIds> {
  const { request } = await c.api('POST', '/scribes/atlas/requests', { task: made.task });
  await c.h.services.dispatcher.tick();
  const { session_id: session } = await c.api('POST', '/scribes/atlas/chat', { message: made.message });
  await c.h.services.runtime.tick();
  const task = await c.h.db('tasks').where({ request_id: request.id }).first('id');
  const type = await c.h.services.entryTypes.create(c.t.organizationId, { name: 'Companies', fields: made.fields });
  const entry = await c.h.services.entries.create(c.t.organizationId, type.id, { fields: made.entry });
  return { request: request.id, task: task.id, session, entryType: type.id, entry: entry.id };
}

/** The ids of one item of each kind, as `oneOfEach` makes them. */
export interface ConsoleIds {
  request: string;
  task: string;
  session: string;
  entryType: string;
  entry: string;
}

/** The console's pages that show one of each kind of item (the ids given), for checks of every page. */
export function consolePages(ids: ConsoleIds): string[] {
  return [
    '/',
    '/scribes',
    '/b/atlas',
    '/b/atlas/settings',
    '/receipts',
    `/receipts/${ids.request}`,
    '/tasks',
    `/tasks/${ids.task}`,
    '/sessions',
    `/sessions/${ids.session}`,
    '/entry-types',
    `/entry-types/${ids.entryType}`,
    `/entries/${ids.entry}`,
    '/schedules',
    '/channels',
    '/webhooks',
    '/keys',
    '/audit',
    '/account',
  ];
}
