import { expect } from 'chai';
import { createHarness, type Harness } from '../helpers/harness.js';
import { ANALYZE_LOCK_KEY, dialectOf } from '../../src/db/dialect.js';
import { onlyOn } from '../helpers/databases.js';

onlyOn('postgres')('withDeadline on PostgreSQL (db/dialect.ts)', function () {
  this.timeout(20_000);
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(() => h.close());

  const sleeping = () =>
    h.db
      .raw(`select count(*) as n from pg_stat_activity where query like 'select pg_sleep(5)%' and state = 'active'`)
      .then((r: { rows: Array<{ n: string }> }) => Number(r.rows[0]!.n));

  it('stops a statement that runs past its deadline: the call fails as "deadline passed" at once, and the server stops running it', async () => {
    const dialect = dialectOf(h.db);
    const started = Date.now();
    const err = await dialect.withDeadline(h.db.select(h.db.raw('pg_sleep(5)')), Date.now() + 200).then(
      () => expect.fail('the statement ended by itself'),
      (e: unknown) => e,
    );
    expect(dialect.isDeadlinePassed(err), String(err)).to.equal(true);
    expect(Date.now() - started).to.be.below(2000);
    expect(await sleeping(), 'the server cancelled the statement').to.equal(0);
  });

  it('lets a statement that ends in time answer, and the connection serves on', async () => {
    const rows = await dialectOf(h.db).withDeadline(h.db.select(h.db.raw('1 as one')), Date.now() + 2000);
    expect(rows).to.deep.equal([{ one: 1 }]);
    expect((await h.db.raw('select 2 as two')).rows).to.deep.equal([{ two: 2 }]);
  });
});

onlyOn('postgres')('optimizeAtStart on PostgreSQL (db/dialect.ts)', function () {
  this.timeout(20_000);
  let h: Harness;
  beforeEach(async () => {
    h = await createHarness();
  });
  afterEach(() => h.close());

  const analyzed = async (table: string) => {
    const { rows } = await h.db.raw('select last_analyze from pg_stat_user_tables where relname = ?', [table]);
    return rows[0].last_analyze !== null;
  };

  it('analyzes the tables that were never analyzed, so a new install is not planned blind', async () => {
    expect(await analyzed('requests')).to.equal(false);
    await dialectOf(h.db).optimizeAtStart(h.db);
    expect(await analyzed('requests')).to.equal(true);
    expect(await analyzed('scribes')).to.equal(true);
  });

  it('leaves it to the process that holds the lock when several start at once', async () => {
    const holder = await h.db.transaction();
    try {
      const { rows } = await holder.raw('select pg_try_advisory_xact_lock(?) as locked', [ANALYZE_LOCK_KEY]);
      expect(rows[0].locked).to.equal(true);
      await dialectOf(h.db).optimizeAtStart(h.db);
      expect(await analyzed('requests')).to.equal(false);
    } finally {
      await holder.rollback();
    }
  });
});
