import fs from 'node:fs';
import { createRequire } from 'node:module';
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { consoleInBrowser, consolePages, oneOfEach, signInPage } from '../helpers/browser.js';

const AXE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

/** axe-core's serious and critical violations on the page as it is, each with where it is. */
async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const violations = (await page.evaluate(() => (window as unknown as { axe: { run(): Promise<{ violations: unknown[] }> } }).axe.run().then((r) => r.violations))) as Violation[];
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${v.id} (${v.impact}): ${v.help} at ${v.nodes
          .slice(0, 3)
          .map((n) => n.target.join(' '))
          .join(', ')}`,
    );
}

/** Every console page through axe-core, signed in as an admin and as a viewer: no serious or critical violation. */
describe('the console through axe-core', function () {
  this.timeout(180_000);
  const c = consoleInBrowser();
  const routes: string[] = [];

  before(async () => {
    const ids = await oneOfEach(c, {
      task: { summary: 'Check the console for access', acceptance_criteria: 'None serious' },
      message: 'What are you working on?',
      fields: [
        { name: 'Name', type: 'text', primary: true },
        { name: 'Public', type: 'boolean' },
      ],
      entry: { Name: 'Acme', Public: true },
    });
    await c.h.services.users.create({ organizationId: c.t.organizationId, email: 'viewer@example.com', password: 'correct horse battery', role: 'viewer' });
    routes.push(...consolePages(ids), '/search?q=acme', '/search?q=working');
  });

  for (const role of ['admin', 'viewer'] as const) {
    it(`finds no serious or critical violation on any page, signed in as ${role === 'admin' ? 'an admin' : 'a viewer'}`, async () => {
      const page = role === 'admin' ? c.page : await c.browser.newPage({ viewport: { width: 1366, height: 900 } });
      if (role === 'viewer') await signInPage(page, c.base, 'viewer@example.com');
      const found: string[] = [];
      for (const route of role === 'admin' ? [...routes, '/users', '/scribes/new'] : routes) {
        const response = await page.goto(`${c.base}${route}`);
        expect(response?.status(), route).to.equal(200);
        for (const violation of await seriousViolations(page)) found.push(`${route}: ${violation}`);
      }
      expect(found).to.deep.equal([]);
    });
  }
});
