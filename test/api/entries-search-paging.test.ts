import { expect } from 'chai';
import { createHarness, testClock, type Harness, type Tenant } from '../helpers/harness.js';
import { entriesFixture } from '../helpers/entries-fixture.js';

// Paging through a search's matches, under both plans (search/compile.ts): postings sorted
// on their page keys, and entries read in page order.
for (const plan of [
  { name: 'postings', driveLimit: undefined },
  { name: 'page order', driveLimit: -1 },
]) {
  describe(`paging a search with after=, ${plan.name}`, () => {
    let h: Harness;
    let t: Tenant;
    let fx: Awaited<ReturnType<typeof entriesFixture>>;
    let url: string;
    const clock = testClock('2026-11-22T10:00:00.000Z');
    /** Every contact, oldest first (ties by id), with its fields. */
    const all: Array<{ id: string; ms: number; score: number; team: string }> = [];

    before(async () => {
      h = await createHarness({ env: { READ_THREADS: '2' }, options: { dispatchOnAccept: false, clock, searchDriveLimit: plan.driveLimit } });
      t = await h.tenant();
      fx = await entriesFixture(h, t);
      const acme = await fx.company({ Name: 'Acme' });
      for (let i = 0; i < 24; i++) {
        // Three entries share each millisecond: the page key's id breaks the ties.
        if (i % 3 === 0) clock.advance(1);
        const team = i % 2 === 0 ? 'Red team' : 'Blue team';
        const entry = await fx.contact({ Name: `Person ${i}`, 'Job Title': team, Score: i, Company: i % 4 === 0 ? [acme.id] : [] });
        all.push({ id: entry.id, ms: Math.floor(i / 3), score: i, team });
      }
      all.sort((a, b) => a.ms - b.ms || (a.id < b.id ? -1 : 1));
      url = `/api/v1/entry_types/${fx.contacts.id}/entries`;
    });
    after(() => h.close());

    async function walk(q: string, limit: number, between?: () => Promise<void>) {
      const ids: string[] = [];
      let cursor: string | null = null;
      for (;;) {
        const after: string = cursor ? `&after=${encodeURIComponent(cursor)}` : '';
        const res = await h.api.get(`${url}?q=${encodeURIComponent(q)}&limit=${limit}${after}`).set(t.headers);
        expect(res.status, res.text).to.equal(200);
        ids.push(...res.body.data.map((e: { id: string }) => e.id));
        cursor = res.body.meta.next_cursor;
        if (!cursor) return ids;
        await between?.();
      }
    }

    const searches: Array<[string, (c: (typeof all)[number]) => boolean]> = [
      ['Score>=5 && Score<20', (c) => c.score >= 5 && c.score < 20],
      ['Job Title:red', (c) => c.team === 'Red team'],
      ['blue', (c) => c.team === 'Blue team'],
      ['relationship:acme', (c) => c.score % 4 === 0],
      ['Score<3 || Score>20 || relationship:Acme', (c) => c.score < 3 || c.score > 20 || c.score % 4 === 0],
      ['team && (Score:7 || Score:8)', (c) => c.score === 7 || c.score === 8],
    ];
    for (const [q, matches] of searches) {
      it(`walks every match of ${JSON.stringify(q)} exactly once, in order, at several limits`, async () => {
        const expected = all.filter(matches).map((c) => c.id);
        expect(expected.length).to.be.greaterThan(1);
        for (const limit of [1, 2, 5, expected.length, 100]) expect(await walk(q, limit), `limit ${limit}`).to.deep.equal(expected);
      });
    }

    it('never skips or repeats a match while matching entries are added between pages', async () => {
      const before = all.filter((c) => c.team === 'Red team').map((c) => c.id);
      const added: string[] = [];
      const seen = await walk('Job Title:red', 4, async () => {
        clock.advance(1);
        added.push((await fx.contact({ Name: `Late ${added.length}`, 'Job Title': 'Red team', Score: 99 })).id);
      });
      expect(seen).to.deep.equal([...before, ...added]);
    });

    it('drops an entry from later pages once it becomes a draft, and shows it again when asked', async () => {
      const entry = await fx.contact({ Name: 'Flipper', 'Job Title': 'Green team', Score: 1000 });
      const green = async (extra = '') =>
        (await h.api.get(`${url}?q=${encodeURIComponent('green && Score>=1000')}${extra}`).set(t.headers)).body.data.map((e: { id: string }) => e.id);
      expect(await green()).to.deep.equal([entry.id]);
      await h.services.entries.update(t.organizationId, entry.id, { draft: true });
      expect(await green()).to.deep.equal([]);
      expect(await green('&include_drafts=true')).to.deep.equal([entry.id]);
      await h.services.entries.update(t.organizationId, entry.id, { draft: false, archived: true });
      expect(await green('&include_drafts=true')).to.deep.equal([]);
      expect(await green('&include_archived=true')).to.deep.equal([entry.id]);
    });
  });
}
