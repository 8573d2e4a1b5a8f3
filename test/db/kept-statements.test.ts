import { expect } from 'chai';
import type BetterSqlite3 from 'better-sqlite3';
import { createHarness, type Harness } from '../helpers/harness.js';
import { onlyOn } from '../helpers/databases.js';
import { keptStatementText } from '../../src/db/knex.js';

onlyOn('sqlite')('statements kept prepared on SQLite (db/knex.ts)', () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
    await h.db.schema.createTable('kept_probe', (t) => {
      t.integer('n').primary();
    });
    await h.db('kept_probe').insert(Array.from({ length: 10 }, (_, n) => ({ n })));
  });
  after(async () => {
    await h.db.schema.dropTable('kept_probe');
    await h.close();
  });

  it('writes a bound LIMIT as an expression, and leaves every other part of the text as it was', () => {
    expect(keptStatementText('select `n` from `kept_probe` where `n` > ? order by `n` asc limit ? offset ?')).to.equal(
      'select `n` from `kept_probe` where `n` > ? order by `n` asc limit (? + 0) offset ?',
    );
    expect(keptStatementText('select exists (select 1 from `a` limit ?) as a, exists (select 1 from `b` limit ?) as b')).to.equal(
      'select exists (select 1 from `a` limit (? + 0)) as a, exists (select 1 from `b` limit (? + 0)) as b',
    );
    expect(keptStatementText('select `limit_at` from `t` where `n` = ?')).to.equal('select `limit_at` from `t` where `n` = ?');
  });

  it('keeps one statement per text, given to SQLite with its LIMIT as an expression', async () => {
    const sql = 'select n from kept_probe order by n limit ?';
    const conn = (await h.db.client.acquireConnection()) as BetterSqlite3.Database;
    try {
      const statement = conn.prepare(sql);
      expect(statement.source).to.equal('select n from kept_probe order by n limit (? + 0)');
      expect(conn.prepare(sql), 'the same statement, kept').to.equal(statement);
      expect(statement.pluck().all(4)).to.deep.equal([0, 1, 2, 3]);
      expect(statement.pluck().all(2)).to.deep.equal([0, 1]);
    } finally {
      await h.db.client.releaseConnection(conn);
    }
  });

  it('answers each limit and offset through Knex as asked, one run after another of the same statement', async () => {
    const page = (limit: number, offset = 0) => h.db('kept_probe').orderBy('n').limit(limit).offset(offset).pluck('n');
    expect(await page(2)).to.deep.equal([0, 1]);
    expect(await page(3)).to.deep.equal([0, 1, 2]);
    expect(await page(1)).to.deep.equal([0]);
    expect(await page(3, 8)).to.deep.equal([8, 9]);
    expect(await page(0)).to.deep.equal([]);
    expect(await h.db('kept_probe').where('n', '>', 4).orderBy('n').first('n')).to.deep.equal({ n: 5 });
  });
});
