import { expect } from 'chai';
import { consoleInBrowser, consolePages, oneOfEach, overflowsSideways } from '../helpers/browser.js';

/**
 * Every page of the console at a phone's width (390 px): nothing makes the page scroll
 * sideways (a wide table scrolls inside its own box), and the header's search is there.
 */
describe('the console in Chromium at 390 px', function () {
  this.timeout(120_000);
  const c = consoleInBrowser();
  const routes: string[] = [];

  before(async () => {
    const long = 'A long title that goes on and on for quite a while, to see that it wraps rather than widens the page';
    // A scribe's long name fills the scribe filters' menus; a title may be one long address.
    await c.h.services.scribes.create({ organizationId: c.t.organizationId, slug: 'emea', name: 'Customer Success Research Assistant for EMEA Enterprise Accounts' });
    const ids = await oneOfEach(c, {
      task: {
        title: 'Check https://example.com/reports/2026/quarterly/customer-success/very-long-path-segment-without-breaks',
        summary: long,
        acceptance_criteria: 'https://example.com/a/very/long/path/that/has/no/spaces/in/it/at/all/anywhere',
      },
      message: long,
      fields: [
        { name: 'Name', type: 'text', primary: true },
        { name: 'Website', type: 'text' },
        { name: 'Public', type: 'boolean' },
      ],
      entry: { Name: 'Acme Corporation International Holdings', Website: 'https://acme.example.com/with/a/long/path', Public: true },
    });
    routes.push(...consolePages(ids), `/entries/${ids.entry}/edit`, '/users', '/scribes/new', '/search?q=long');
  });

  it('fits every page to the width, with the search box in the header', async () => {
    const phone = await c.newPage(390);
    const overflowing: string[] = [];
    for (const route of routes) {
      const response = await phone.goto(`${c.base}${route}`);
      expect(response?.status(), route).to.equal(200);
      if (await overflowsSideways(phone)) overflowing.push(route);
      expect(await phone.getByRole('searchbox', { name: 'Find an id, slug or title' }).isVisible(), route).to.equal(true);
      await c.shot(`phone${route.replace(/\?.*$/, '').replace(/[^a-z0-9]+/gi, '-')}`, phone);
    }
    expect(overflowing, 'pages wider than 390 px').to.deep.equal([]);
    await phone.close();
  });
});
