import { expect } from 'chai';
import fc from 'fast-check';
import { entryJson, presentEntry } from '../../src/entries/entry-service.js';

describe('entryJson()', () => {
  const iso = fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString());
  const value = fc.oneof(fc.string({ unit: 'binary' }), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.array(fc.uuid(), { maxLength: 3 }));
  const row = fc.record({
    id: fc.uuid(),
    entry_type_id: fc.uuid(),
    // As the entry service stores them: written by JSON.stringify.
    fields: fc.dictionary(fc.string({ unit: 'binary', minLength: 1 }), value).map((fields) => JSON.stringify(fields)),
    draft: fc.constantFrom(0, 1, true, false),
    archived_at: fc.option(iso, { nil: null }),
    created_at: iso,
    updated_at: iso,
  });

  it('writes exactly what JSON.stringify(presentEntry(row)) writes, for any stored entry', () => {
    fc.assert(
      fc.property(row, (r) => {
        expect(entryJson(r)).to.equal(JSON.stringify(presentEntry(r)));
      }),
      { numRuns: 1000 },
    );
  });
});
