import { expect } from 'chai';
import fc from 'fast-check';
import { createHarness, type Harness } from '../helpers/harness.js';
import type { EntryTypeWithFields } from '../../src/entries/entry-type-service.js';

describe('entries as JSON text from the database (list pages)', () => {
  let h: Harness;
  let orgId: string;
  let type: EntryTypeWithFields;
  let targetId: string;
  before(async () => {
    h = await createHarness({ env: { READ_THREADS: '2' } });
    orgId = (await h.tenant()).organizationId;
    const target = await h.services.entryTypes.create(orgId, { name: 'Targets', fields: [{ name: 'Name', type: 'text', primary: true }] });
    targetId = (await h.services.entries.create(orgId, target.id, { fields: { Name: 'T' } })).id;
    type = await h.services.entryTypes.create(orgId, {
      name: 'Things',
      fields: [
        { name: 'Name', type: 'text', primary: true },
        { name: 'Note', type: 'text' },
        { name: 'Count', type: 'number' },
        { name: 'Flag', type: 'boolean' },
        { name: 'Day', type: 'date' },
        { name: 'Link', type: 'relationship', target: target.id },
      ],
    });
  });
  after(() => h.close());

  it('is, entry by entry, exactly the text JSON.stringify makes of the entry the service reads by id', async () => {
    // Any text but U+0000, which no database column holds (write-services.test.ts).
    const anyText = (minLength: number) => fc.string({ unit: 'binary', minLength, maxLength: 40 }).map((s) => s.replaceAll('\u0000', '\u0001'));
    const input = fc.record(
      {
        Name: anyText(1).filter((s) => s.trim() !== ''),
        Note: fc.option(anyText(0), { nil: undefined }),
        Count: fc.option(fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e12, max: 1e12 }), { nil: undefined }),
        Flag: fc.option(fc.boolean(), { nil: undefined }),
        Day: fc.option(
          fc.date({ min: new Date('1900-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
          { nil: undefined },
        ),
        Link: fc.option(fc.constant('link'), { nil: undefined }),
      },
      { requiredKeys: ['Name'] },
    );
    await fc.assert(
      fc.asyncProperty(input, fc.boolean(), fc.boolean(), async (fields, draft, archived) => {
        const values = { ...fields, Link: fields.Link ? [targetId] : undefined };
        const created = await h.services.entries.create(orgId, type.id, { fields: values, draft, archived });
        const page = await h.services.entries.listJson(type, { limit: 1000, includeDrafts: true, includeArchived: true });
        const listed = page.entries.find((json) => json.includes(created.id));
        expect(listed).to.equal(JSON.stringify(await h.services.entries.get(orgId, created.id)));
      }),
      { numRuns: 150 },
    );
  });
});
