import { expect } from 'chai';
import { createHarness, type Harness } from '../helpers/harness.js';
import { dialectOf } from '../../src/db/dialect.js';
import { itOnlyOn, statementsDuring, testDatabaseKind } from '../helpers/databases.js';

describe('tidying queue tables after a drain (db/dialect.ts, tidyAfterDrain)', function () {
  this.timeout(20_000);
  let h: Harness;
  beforeEach(async () => {
    h = await createHarness({ options: { dispatcher: { tidyAfter: 3 }, dispatchOnAccept: false } });
  });
  afterEach(() => h.close());

  /** How often each table was vacuumed by hand (not by autovacuum). */
  const vacuums = async (...tables: string[]): Promise<Record<string, number>> => {
    const { rows } = await h.db.raw(`select relname, vacuum_count from pg_stat_user_tables where relname in (${tables.map(() => '?').join(', ')})`, tables);
    return Object.fromEntries((rows as Array<{ relname: string; vacuum_count: string }>).map((r) => [r.relname, Number(r.vacuum_count)]));
  };

  it(`${testDatabaseKind === 'postgres' ? 'vacuums each table named, once' : 'runs nothing on SQLite, which leaves no dead entries'}`, async () => {
    const before = testDatabaseKind === 'postgres' ? await vacuums('requests', 'tasks') : {};
    const statements = (await statementsDuring(h.db, () => dialectOf(h.db).tidyAfterDrain(h.db, ['requests', 'tasks']))).statements.map((statement) => statement.sql);
    if (testDatabaseKind === 'sqlite') {
      expect(statements).to.deep.equal([]);
      return;
    }
    expect(statements).to.deep.equal(['vacuum (skip_locked) "requests", "tasks"']);
    expect(await vacuums('requests', 'tasks')).to.deep.equal({ requests: before.requests! + 1, tasks: before.tasks! + 1 });
  });

  itOnlyOn('postgres')('the dispatcher vacuums the receipts once idle after tidyAfter of them were claimed, not before', async () => {
    const t = await h.tenant();
    const submit = (n: number) => Promise.all(Array.from({ length: n }, (_, i) => h.services.requests.submit(t.scribe, { task: { summary: `receipt ${i}` } })));
    const before = (await vacuums('requests')).requests!;
    await submit(2);
    expect(await h.services.dispatcher.tick()).to.include({ fulfilled: 2 });
    expect((await vacuums('requests')).requests, 'two claimed: fewer than tidyAfter').to.equal(before);
    await submit(1);
    expect(await h.services.dispatcher.tick()).to.include({ fulfilled: 1 });
    expect((await vacuums('requests')).requests, 'the third: one vacuum, which the tick waited for').to.equal(before + 1);
    await h.services.dispatcher.tick();
    expect((await vacuums('requests')).requests, 'nothing claimed since').to.equal(before + 1);
    expect(await h.db('requests').where({ status: 'fulfilled' }).count({ n: '*' }).first()).to.deep.equal({ n: 3 });
  });
});
