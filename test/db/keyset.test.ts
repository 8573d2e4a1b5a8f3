import { expect } from 'chai';
import { createHarness, type Harness } from '../helpers/harness.js';
import { readKeysetPage } from '../../src/db/keyset.js';

describe('keyset pages with their count (db/keyset.ts)', () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(() => h.close());

  it('fails the call when its reads fail, and leaves no rejection unawaited (which would end the process)', async () => {
    const unawaited: unknown[] = [];
    const record = (reason: unknown) => unawaited.push(reason);
    process.on('unhandledRejection', record);
    try {
      // The page's read and its count both fail: the table is not there.
      const query = h.db('no_such_table').select('id');
      const err = await readKeysetPage(h.db, query, { columns: ['id'], keyOf: (row: { id: string }) => [row.id] }, {}, 10).catch((e: Error) => e);
      expect((err as Error).message).to.match(/no_such_table/);
      // A rejection nobody awaits is reported once the microtasks and a turn of the loop have run.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unawaited, 'rejections nobody awaited').to.deep.equal([]);
    } finally {
      process.off('unhandledRejection', record);
    }
  });
});
