import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createHarness, type Harness } from '../helpers/harness.js';
import { deadlocksOf, itOnlyOn } from '../helpers/databases.js';
import { openDatabase, type Db } from '../../src/db/knex.js';
import { bringRunTurnsForward, runsEnded } from '../../src/scribes/queries.js';
import { claimRuns, countRunsInFlight } from '../../src/runtime/queries.js';

/**
 * Writes to several scribes' rows take them in order of id, as a claim does: a batch of runs'
 * ends that took them in the order it read the table deadlocked with another process's claim
 * (seen in the agents bench with two PostgreSQL processes: PostgreSQL failed the batch after a
 * second, and that process claimed nothing meanwhile).
 */
describe("several scribes' rows written at once", function () {
  this.timeout(20_000);
  let h: Harness;
  let other: Db;
  /** Two scribes, `low` first by id, stored in the table after `high` (an update writes a row's new version at the end). */
  let low: string;
  let high: string;

  before(async () => {
    h = await createHarness({ options: { runOnNewWork: false, dispatchOnAccept: false } });
    if (h.config.databaseKind !== 'postgres') return;
    other = openDatabase(h.config.databaseUrl, { poolSize: 2 });
    const t = await h.tenant({ slug: 'locks-a' });
    const second = await h.services.scribes.create({ organizationId: t.organizationId, slug: 'locks-b', name: 'locks-b' });
    [low, high] = [t.scribe.id, second.id].sort() as [string, string];
  });
  after(async () => {
    await other?.destroy();
    await h.close();
  });

  for (const [name, write] of [
    [
      'runs ended (a batch of runs’ ends)',
      (trx: Db) =>
        runsEnded(
          trx,
          [high, low].map((scribeId) => ({ scribeId, at: '2026-12-01T10:00:00.000Z' })),
        ),
    ],
    ['turns brought forward (a batch of new tasks)', (trx: Db) => bringRunTurnsForward(trx, [high, low], '2026-12-01T10:00:00.000Z')],
  ] as const) {
    itOnlyOn('postgres')(`${name}: waits for a claim holding the lower id without holding the higher, so the claim takes it and both commit`, async () => {
      await h.db('scribes').where({ id: low }).update({ runs_in_flight: 5 });
      await h.db('scribes').where({ id: high }).update({ runs_in_flight: 5 });
      await h.db('scribes').where({ id: low }).update({ runs_in_flight: 5 });
      // The table is read high, then low: an UPDATE of both would lock them in that order.
      expect(await h.db('scribes').whereIn('id', [low, high]).orderByRaw('ctid').pluck('id')).to.deep.equal([high, low]);
      const before = await deadlocksOf(h.db);

      const claim = await other.transaction();
      await claim('scribes').where({ id: low }).forNoKeyUpdate().select('id');
      const batch = h.db.transaction(async (trx) => write(trx));
      // The batch is waiting for `low` now; the claim goes on to `high`, as a claim takes its scribes in order of id.
      await new Promise((resolve) => setTimeout(resolve, 200));
      await claim('scribes').where({ id: high }).forNoKeyUpdate().select('id');
      await claim.commit();
      await batch;

      expect(await deadlocksOf(h.db)).to.equal(before);
      const counts = await h.db('scribes').whereIn('id', [low, high]).orderBy('id').pluck('runs_in_flight');
      expect(counts).to.deep.equal(name.startsWith('runs') ? [4, 4] : [5, 5]);
    });
  }

  itOnlyOn('postgres')(
    'a claim letting go of lapsed runs of scribes powered off waits for a batch holding the lower id without holding the higher, so the batch takes it and both commit',
    async () => {
      const t = await h.tenant({ slug: 'sleepers-a' });
      const second = await h.services.scribes.create({ organizationId: t.organizationId, slug: 'sleepers-b', name: 'sleepers-b' });
      const scribes = [t.scribe, second].sort((a, b) => (a.id < b.id ? -1 : 1));
      const [lo, hi] = scribes.map((scribe) => scribe.id) as [string, string];
      const sessions = [];
      for (const scribe of scribes)
        sessions.push(
          await h.services.sessions.start({ id: scribe.id, organization_id: t.organizationId, slug: scribe.slug, state: 'active' }, { message: 'hello', endImmediately: false }),
        );
      // A process claimed both and died; both scribes were powered off before anyone took the runs over.
      const now = new Date().toISOString();
      const shares = (turns: ReadonlyArray<{ id: string }>) => turns.filter((turn) => turn.id === lo || turn.id === hi).map((turn) => [turn.id, 1] as [string, number]);
      expect((await claimRuns(h.db, { token: randomUUID(), now, leaseUntil: now, slots: 2, lapsed: false }, shares)).runs).to.have.length(2);
      // The higher id's run is read first (the lower's row, written last, is stored after it),
      // and its lease ran out first: the claim lets go of it first.
      await h
        .db('sessions')
        .where({ scribe_id: hi })
        .update({ lease_until: new Date(Date.parse(now) - 1000).toISOString() });
      await h.db('sessions').where({ scribe_id: lo }).update({ lease_until: now });
      expect(await h.db('sessions').whereIn('scribe_id', [lo, hi]).orderByRaw('ctid').pluck('scribe_id')).to.deep.equal([hi, lo]);
      for (const scribe of scribes) await h.services.scribes.setState(t.organizationId, scribe.slug, 'powered_off');
      const before = await deadlocksOf(h.db);

      // A batch of runs' ends holds the lower id, and will go on to the higher (holdInOrder).
      const batch = await other.transaction();
      await batch('scribes').where({ id: lo }).forNoKeyUpdate().select('id');
      const claim = claimRuns(h.db, { token: randomUUID(), now: new Date().toISOString(), leaseUntil: new Date(Date.now() + 30_000).toISOString(), slots: 10 }, () => []);
      await new Promise((resolve) => setTimeout(resolve, 200));
      await batch('scribes').where({ id: hi }).forNoKeyUpdate().select('id');
      await batch.commit();
      const claimed = await claim;

      expect(await deadlocksOf(h.db)).to.equal(before);
      expect(claimed.runs).to.deep.equal([]);
      const rows = await h
        .db('sessions')
        .whereIn(
          'id',
          sessions.map((session) => session.id),
        )
        .select('claim_token', 'lease_until', 'attempts');
      expect(rows).to.deep.equal([
        { claim_token: null, lease_until: null, attempts: 1 },
        { claim_token: null, lease_until: null, attempts: 1 },
      ]);
      expect(await countRunsInFlight(h.db, [lo, hi])).to.deep.equal([
        { id: lo, counted: 0, claimed: 0 },
        { id: hi, counted: 0, claimed: 0 },
      ]);
    },
  );
});
