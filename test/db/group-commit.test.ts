import { expect } from 'chai';
import { createHarness, type Harness } from '../helpers/harness.js';
import { testDatabaseKind } from '../helpers/databases.js';
import { atGroupEnd, atomically, groupCommits, readOncePerGroup } from '../../src/db/group-commit.js';
import { openDatabase, type Db } from '../../src/db/knex.js';

describe('group commit of small writes (db/group-commit.ts)', function () {
  this.timeout(20_000);
  let h: Harness;
  let commits = 0;
  /** Savepoints Knex made for nested transactions (it names them trxN). */
  let knexSavepoints = 0;
  const countCommits = (query: { sql: string }) => {
    if (/^commit;?$/i.test(query.sql.trim())) commits++;
    if (/^savepoint trx\d+/i.test(query.sql.trim())) knexSavepoints++;
  };

  before(async () => {
    h = await createHarness();
    await h.db.schema.createTable('group_commit_probe', (t) => {
      t.string('v').primary();
    });
    h.db.on('query', countCommits);
  });
  after(async () => {
    h.db.off('query', countCommits);
    await h.db.schema.dropTable('group_commit_probe');
    await h.close();
  });
  beforeEach(async () => {
    await h.db('group_commit_probe').delete();
    commits = 0;
    knexSavepoints = 0;
  });

  const insert = (v: string) => (trx: Db) => trx('group_commit_probe').insert({ v });
  /** A write of two statements made as one: the second fails on a duplicate. */
  const insertTwice = (v: string) => (trx: Db) =>
    atomically(trx, async (inner) => {
      await inner('group_commit_probe').insert({ v });
      await inner('group_commit_probe').insert({ v });
    });
  const failureOf = (write: Promise<unknown>) =>
    write.then(
      () => expect.fail('the write succeeded'),
      (err: unknown) => err,
    );
  const stored = async () => (await h.db('group_commit_probe').orderBy('v').pluck('v')) as string[];

  it('lets writes that come while a group runs join it, for at most maxGroupMs, then commits and leaves the rest to the next', async () => {
    const slow = (v: string) => async (trx: Db) => {
      await new Promise((resolve) => setTimeout(resolve, 40));
      await insert(v)(trx);
    };
    const joining = groupCommits(h.db, { maxGroupMs: 1000 });
    const first = joining(slow('a'));
    await new Promise((resolve) => setTimeout(resolve, 10));
    // Comes while the group holding a runs: it joins that group.
    await Promise.all([first, joining(insert('b'))]);
    expect(commits).to.equal(testDatabaseKind === 'sqlite' ? 1 : 0);
    const bounded = groupCommits(h.db, { maxGroupMs: 20 });
    // c took the group past 20 ms: d and e wait for the next.
    await Promise.all([bounded(slow('c')), bounded(insert('d')), bounded(insert('e'))]);
    expect(await stored()).to.deep.equal(['a', 'b', 'c', 'd', 'e']);
    expect(commits).to.equal(testDatabaseKind === 'sqlite' ? 3 : 0);
  });

  it(
    testDatabaseKind === 'sqlite' ? 'commits writes made together in one transaction on SQLite' : 'leaves each write to itself on PostgreSQL: one statement, no transaction',
    async () => {
      const writes = groupCommits(h.db);
      await Promise.all(['a', 'b', 'c', 'd'].map((v) => writes(insert(v))));
      expect(await stored()).to.deep.equal(['a', 'b', 'c', 'd']);
      expect(commits).to.equal(testDatabaseKind === 'sqlite' ? 1 : 0);
    },
  );

  it('rolls back a write that fails alone: its caller gets the error, the writes beside it are kept', async () => {
    const writes = groupCommits(h.db);
    const outcomes = await Promise.allSettled([writes(insert('a')), writes(insertTwice('b')), writes(insert('c'))]);
    expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    expect(String((outcomes[1] as PromiseRejectedResult).reason)).to.match(/unique|duplicate/i);
    expect(await stored(), 'nothing of the failed write, all of the others').to.deep.equal(['a', 'c']);
    expect(knexSavepoints, 'a savepoint of the group, not a nested Knex transaction').to.equal(0);
  });

  it('makes a write atomic outside a group too: in a transaction of its own', async () => {
    await insert('a')(h.db);
    expect(String(await failureOf(insertTwice('b')(h.db)))).to.match(/unique|duplicate/i);
    // A group's transaction ended, its writes given another: atomic in a transaction of their own (a nested one).
    await h.db.transaction(async (trx) => {
      expect(String(await failureOf(insertTwice('c')(trx)))).to.match(/unique|duplicate/i);
      await insert('d')(trx);
    });
    expect(await stored()).to.deep.equal(['a', 'd']);
  });

  it('keeps a grouped write that succeeds after one that failed inside it was caught (savepoints nest)', async () => {
    const writes = groupCommits(h.db);
    const outer = (trx: Db) =>
      atomically(trx, async (inner) => {
        await insert('a')(inner);
        await insertTwice('b')(inner).catch(() => {});
        await insert('c')(inner);
      });
    await Promise.all([writes(outer), writes(insert('d'))]);
    expect(await stored()).to.deep.equal(['a', 'c', 'd']);
    // SQLite: the group's commit; PostgreSQL: that of the outer write's own transaction (d is one statement).
    expect(commits).to.equal(1);
  });

  it(
    testDatabaseKind === 'sqlite'
      ? "shares a read among a group's writes (readOncePerGroup): once a key a group, each time outside one, again after a failed read"
      : 'reads each time for each write (readOncePerGroup) on PostgreSQL, where writes are not grouped',
    async () => {
      const reads: string[] = [];
      const read = (trx: Db, key: string) =>
        readOncePerGroup(trx, key, async () => {
          reads.push(key);
          if (key === 'broken' && reads.filter((k) => k === 'broken').length === 1) throw new Error('read failed');
          return (await trx('group_commit_probe').count({ n: '*' }).first())!.n;
        });
      const writes = groupCommits(h.db);
      const reading = (key: string) => writes((trx) => read(trx, key));
      const outcomes = await Promise.allSettled([reading('a'), reading('a'), reading('b'), reading('broken'), reading('broken'), reading('a')]);
      expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
      expect(reads).to.deep.equal(testDatabaseKind === 'sqlite' ? ['a', 'b', 'broken', 'broken'] : ['a', 'a', 'b', 'broken', 'broken', 'a']);
      reads.length = 0;
      // Outside a group, even in a transaction, and in the next group: read anew.
      await read(h.db, 'a');
      await h.db.transaction((trx) => read(trx, 'a').then(() => read(trx, 'a')));
      await writes((trx) => read(trx, 'a'));
      expect(reads).to.deep.equal(['a', 'a', 'a', 'a']);
    },
  );

  it(
    testDatabaseKind === 'sqlite'
      ? "applies what a group's writes leave for its end once (atGroupEnd), for the writes that succeeded; at once outside a group"
      : 'applies what each write leaves for the end of a group at once (atGroupEnd) on PostgreSQL, where writes are not grouped',
    async () => {
      const applied: string[][] = [];
      const tally = async (trx: Db, items: readonly string[]) => {
        applied.push([...items]);
        await insert(items.join('+'))(trx);
      };
      const leaving = (v: string) => (trx: Db) => atGroupEnd(trx, [v], tally);
      // Leaves its item, then fails: the item goes with what it wrote.
      const leavingThenFailing = (v: string) => (trx: Db) =>
        atomically(trx, async (inner) => {
          await atGroupEnd(inner, [v], tally);
          await insertTwice(v)(inner);
        });
      // Catches a failure inside it that had left an item: that item goes, its own stays.
      const catching = (v: string) => (trx: Db) =>
        atomically(trx, async (inner) => {
          await leavingThenFailing(`${v}-inner`)(inner).catch(() => {});
          await atGroupEnd(inner, [v], tally);
        });
      const writes = groupCommits(h.db);
      const outcomes = await Promise.allSettled([writes(leaving('a')), writes(leavingThenFailing('b')), writes(catching('c')), writes(leaving('d'))]);
      expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
      if (testDatabaseKind === 'sqlite') {
        expect(applied).to.deep.equal([['a', 'c', 'd']]);
        expect(await stored()).to.deep.equal(['a+c+d']);
        expect(commits).to.equal(1);
      } else {
        // Each at once, in its write's own transaction: those of the writes that failed were rolled back with them.
        expect(applied.map((items) => items.join('+')).sort()).to.deep.equal(['a', 'b', 'c', 'c-inner', 'd']);
        expect(await stored()).to.deep.equal(['a', 'c', 'd']);
      }
      applied.length = 0;
      await h.db.transaction((trx) => leaving('e')(trx));
      expect(applied, 'outside a group, even in a transaction: at once').to.deep.equal([['e']]);
    },
  );

  it('fails every write of a group whose end fails, and writes nothing of it', async () => {
    const writes = groupCommits(h.db);
    const broken = async () => {
      throw new Error('the end failed');
    };
    const outcomes = await Promise.allSettled([writes(insert('a')), writes((trx) => atGroupEnd(trx, ['b'], broken)), writes(insert('c'))]);
    if (testDatabaseKind === 'sqlite') {
      expect(outcomes.map((o) => o.status)).to.deep.equal(['rejected', 'rejected', 'rejected']);
      expect(outcomes.map((o) => String((o as PromiseRejectedResult).reason))).to.deep.equal(Array(3).fill('Error: the end failed'));
      expect(await stored()).to.deep.equal([]);
    } else {
      // No group: the write that applies its item at once fails alone.
      expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
      expect(await stored()).to.deep.equal(['a', 'c']);
    }
  });

  it('gathers the writes that come within gapMs of a commit into the next one', async () => {
    const writes = groupCommits(h.db, { gapMs: () => 100 });
    await writes(insert('a'));
    const first = commits;
    // Three writes a few milliseconds apart, within the gap of the first commit: one commit more.
    const later: Array<Promise<unknown>> = [];
    for (const v of ['b', 'c', 'd']) {
      later.push(writes(insert(v)));
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await Promise.all(later);
    expect(await stored()).to.deep.equal(['a', 'b', 'c', 'd']);
    if (testDatabaseKind === 'sqlite') expect([first, commits]).to.deep.equal([1, 2]);
  });

  it('commits the first write at once, however long the gap (a wait would outlast the test)', async () => {
    const writes = groupCommits(h.db, { gapMs: () => 60_000 });
    await writes(insert('a'));
    expect(await stored()).to.deep.equal(['a']);
  });

  it('fails the writes waiting for a group that cannot begin (the database closed), once each, rather than trying again at once', async () => {
    const closed = openDatabase(h.config.databaseUrl);
    await closed.destroy();
    // Were a write tried again, the third try would begin on the open database and succeed.
    let begun = 0;
    const tried = new Proxy(closed, {
      get: (target, name, receiver) =>
        name === 'transaction' ? (work: (trx: Db) => Promise<unknown>) => (++begun < 3 ? target.transaction(work) : h.db.transaction(work)) : Reflect.get(target, name, receiver),
    });
    const writes = groupCommits(tried);
    const failures = await Promise.all([failureOf(writes(insert('a'))), failureOf(writes(insert('b')))]);
    expect(failures.map((err) => String((err as Error).message))).to.satisfy((messages: string[]) => messages.every((m) => /unable to acquire a connection/i.test(m)));
    expect(begun, testDatabaseKind === 'sqlite' ? 'one group, which could not begin' : 'each write on its own, no group').to.equal(testDatabaseKind === 'sqlite' ? 1 : 0);
    expect(await stored()).to.deep.equal([]);
  });
});
