import { expect } from 'chai';
import { createHarness, type Harness } from '../helpers/harness.js';
import { testDatabaseKind } from '../helpers/databases.js';
import { insertRows } from '../../src/db/rows.js';

describe('batch inserts (db/rows.ts)', () => {
  let h: Harness;
  /** Rows each INSERT wrote, in order. */
  let inserts: number[] = [];
  const count = (query: { sql: string; bindings?: unknown[] }) => {
    if (/^insert into .rows_probe./i.test(query.sql)) inserts.push(query.bindings!.length);
  };

  before(async () => {
    h = await createHarness();
    await h.db.schema.createTable('rows_probe', (t) => {
      t.integer('n').primary();
    });
    h.db.on('query', count);
  });
  after(async () => {
    h.db.off('query', count);
    await h.db.schema.dropTable('rows_probe');
    await h.close();
  });
  beforeEach(async () => {
    await h.db('rows_probe').delete();
    inserts = [];
  });

  const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ n: i }));

  it(
    testDatabaseKind === 'sqlite'
      ? 'inserts a batch in INSERTs of a power of two rows beyond four on SQLite, so that a table keeps a few prepared texts'
      : 'inserts a batch in as few INSERTs as PostgreSQL takes, 500 rows each',
    async () => {
      await insertRows(h.db, 'rows_probe', rows(45));
      expect(inserts).to.deep.equal(testDatabaseKind === 'sqlite' ? [32, 8, 4, 1] : [45]);
      inserts = [];
      await h.db('rows_probe').delete();
      await insertRows(h.db, 'rows_probe', rows(1100));
      expect(inserts).to.deep.equal(testDatabaseKind === 'sqlite' ? [256, 256, 256, 256, 64, 8, 4] : [500, 500, 100]);
      expect(await h.db('rows_probe').orderBy('n').pluck('n')).to.deep.equal(rows(1100).map((row) => row.n));
      for (const [n, sizes] of [
        [3, [3]],
        [7, [4, 3]],
      ] as const) {
        inserts = [];
        await h.db('rows_probe').delete();
        await insertRows(h.db, 'rows_probe', rows(n));
        expect(inserts).to.deep.equal(testDatabaseKind === 'sqlite' ? sizes : [n]);
      }
      inserts = [];
      await insertRows(h.db, 'rows_probe', []);
      expect(inserts).to.deep.equal([]);
    },
  );
});
