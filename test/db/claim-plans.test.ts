import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createHarness, type Harness } from '../helpers/harness.js';
import { onlyOn, statementsDuring, type RanStatement } from '../helpers/databases.js';
import { finishRuns, type RunFinish } from '../../src/tasks/queries.js';

/*
 * A claim must read only its queue's partial index (the due rows), never an index that
 * also holds every finished row, or each claim walks past all the work ever done. SQLite's
 * planner has no statistics to tell two indexes on the same columns apart, so the claims
 * name their index (db/dialect.ts, fromIndex); this holds them to it as they really run.
 * PostgreSQL chooses from its statistics; the bench's rows after 100,000 finished items
 * show its claims stay flat.
 */
onlyOn('sqlite')('the indexes claims read (SQLite)', function () {
  this.timeout(20_000);
  let h: Harness;
  before(async () => {
    h = await createHarness({ options: { runOnNewWork: false, dispatchOnAccept: false } });
  });
  after(() => h.close());

  /** The statements run while `fn` runs that claim rows: an UPDATE of the rows a SELECT with an order and a limit picks. */
  async function claimsDuring(fn: () => Promise<unknown>): Promise<RanStatement[]> {
    const { statements } = await statementsDuring(h.db, fn);
    return statements.filter((statement) => /^update\b/i.test(statement.sql) && /\bin \(select\b.*\border by\b.*\blimit\b/is.test(statement.sql));
  }

  /** The indexes of the database with a WHERE: partial ones. */
  const partialIndexes = async () => new Set<string>(await h.db('sqlite_master').where({ type: 'index' }).whereLike('sql', '% where %').pluck('name'));

  /** The indexes each step of the statement's plan searches. */
  async function indexesSearched(statement: RanStatement): Promise<string[]> {
    const plan: Array<{ detail: string }> = await h.db.raw(`explain query plan ${statement.sql}`, statement.bindings);
    return plan.flatMap(({ detail }) => [...detail.matchAll(/USING (?:COVERING )?INDEX (\w+)/g)].map((m) => m[1]!));
  }

  it('reads, for each of the agent runtime and the dispatcher, the queue partial index and the primary key only, with finished tasks and an index of all tasks by scribe beside it', async () => {
    const t = await h.tenant({ slug: 'plans' });
    const submit = () =>
      h.api
        .post(`/api/v1/scribes/${t.scribe.slug}/requests`)
        .set(t.headers)
        .send({ task: { summary: 'Sum up the week' } });
    for (let i = 0; i < 3; i++) expect((await submit()).status).to.equal(202);
    await h.services.dispatcher.tick();
    expect(await h.services.runtime.tick()).to.deep.equal({ sessions: 0, tasks: 3 });
    expect((await submit()).status).to.equal(202);
    expect((await h.api.post(`/api/v1/scribes/${t.scribe.slug}/chat`).set(t.headers).send({ message: 'Hello' })).status).to.equal(202);

    const claims = await claimsDuring(async () => {
      await h.services.dispatcher.tick();
      expect(await h.services.runtime.tick()).to.deep.equal({ sessions: 1, tasks: 1 });
    });
    const tables = claims.map((claim) => /^update [`"](\w+)[`"]/i.exec(claim.sql)![1]);
    // Sessions and tasks: those whose lease ran out, then those waiting.
    expect(tables.sort()).to.deep.equal(['requests', 'sessions', 'sessions', 'tasks', 'tasks']);

    const partial = await partialIndexes();
    for (const claim of claims) {
      const searched = await indexesSearched(claim);
      const table = /^update [`"](\w+)[`"]/i.exec(claim.sql)![1]!;
      expect(
        searched.filter((index) => !partial.has(index) && !index.startsWith('sqlite_autoindex_')),
        `${table}: ${searched.join(', ')}`,
      ).to.deep.equal([]);
      expect(
        searched.some((index) => partial.has(index)),
        `${table} reads its queue's partial index`,
      ).to.equal(true);
    }
  });
  it("reads only partial indexes in a claim's other looks: whether any session or task waits, and whose turn it is", async () => {
    const t = await h.tenant({ slug: 'looks' });
    expect(
      (
        await h.api
          .post(`/api/v1/scribes/${t.scribe.slug}/requests`)
          .set(t.headers)
          .send({ task: { summary: 'Tidy the files' } })
      ).status,
    ).to.equal(202);
    await h.services.dispatcher.tick();
    const { statements } = await statementsDuring(h.db, () => h.services.runtime.tick());
    const looks = statements.filter((statement) => /^select\b/i.test(statement.sql) && /\bindexed by\b/i.test(statement.sql));
    const named = looks.flatMap((look) => [...look.sql.matchAll(/indexed by [`"](\w+)[`"]/gi)].map((m) => m[1]!)).sort();
    expect(named).to.include.members(['scribes_idle_turns', 'scribes_run_turns', 'sessions_unclaimed_by_scribe', 'tasks_unclaimed_by_scribe']);
    const partial = await partialIndexes();
    for (const look of looks) {
      const searched = await indexesSearched(look);
      expect(
        searched.filter((index) => !partial.has(index)),
        look.sql,
      ).to.deep.equal([]);
      expect(searched, look.sql).to.not.deep.equal([]);
    }
  });

  it("finds the rows of many runs' ends in one statement by their primary key, never through an index built for the statement", async () => {
    // As many ends as one UPDATE takes: from 64 listed rows, a cast of the id column led the
    // planner to build an automatic index of every in-progress task at each statement.
    const finishes: RunFinish[] = Array.from({ length: 64 }, () => ({
      id: randomUUID(),
      claimToken: randomUUID(),
      to: 'done',
      author: 'scribe',
      text: 'Done',
      at: new Date().toISOString(),
      result: 'Done',
      lastError: null,
    }));
    const { statements } = await statementsDuring(h.db, () => finishRuns(h.db, finishes));
    const ends = statements.filter((statement) => /^update [`"]?tasks[`"]? set status = v\.status/i.test(statement.sql));
    expect(ends).to.have.length(1);
    const plan: Array<{ detail: string }> = await h.db.raw(`explain query plan ${ends[0]!.sql}`, ends[0]!.bindings);
    const steps = plan.map(({ detail }) => detail);
    expect(steps.filter((step) => /AUTOMATIC/.test(step))).to.deep.equal([]);
    expect(
      steps.some((step) => /SEARCH tasks USING (?:COVERING )?INDEX sqlite_autoindex_tasks_1 \(id=\?\)/.test(step)),
      steps.join(' | '),
    ).to.equal(true);
  });
});
