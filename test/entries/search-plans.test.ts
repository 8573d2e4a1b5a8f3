import { expect } from 'chai';
import { testClock } from '../helpers/harness.js';
import { entriesSuite } from '../helpers/entries-fixture.js';
import { driveLimitFor, planSearch } from '../../src/entries/search/compile.js';
import { TrigramStats, trigramsOf } from '../../src/entries/search/text-match.js';
import { listEntries } from '../../src/entries/queries.js';

describe('search plans (search/compile.ts)', () => {
  const clock = testClock('2026-11-22T10:00:00.000Z');
  const suite = entriesSuite({ clock });

  before(async () => {
    // 12 companies in Zurich (one of them also "Rare"), 3 in Geneva; Employees 0..14.
    for (let i = 0; i < 15; i++) {
      clock.advance(1000);
      await suite.fx.company({ Name: i === 4 ? 'Rare Widgets' : `Company ${i}`, City: i < 12 ? 'Zurich' : 'Geneva', Employees: i, Public: i % 2 === 0 });
    }
  });

  const stats = () => new TrigramStats(suite.h.db, { sample: 100, ttlMs: 60_000, maxEntries: 100 });
  const typeOf = () => suite.h.services.entryTypes.get(suite.t.organizationId, suite.fx.companies.id);
  const plan = async (q: string, driveLimit?: number) => planSearch(suite.h.db, await typeOf(), q, { stats: stats(), driveLimit });
  const names = async (q: string, driveLimit?: number) => {
    const rows = await listEntries(suite.h.db, {
      entryTypeId: suite.fx.companies.id,
      includeDrafts: false,
      includeArchived: false,
      plan: await plan(q, driveLimit),
      limit: 100,
    });
    return rows.map((json) => (JSON.parse(json) as { fields: { Name: string } }).fields.Name);
  };

  it('lists up to √(100 · entries) matches, between 1,000 and 20,000', () => {
    expect(driveLimitFor(0)).to.equal(1000);
    expect(driveLimitFor(100_000)).to.equal(3162);
    expect(driveLimitFor(1_000_000)).to.equal(10_000);
    expect(driveLimitFor(100_000_000)).to.equal(20_000);
  });

  it('reads few matches from their postings and many in page order, with the same results', async () => {
    // Limit 3: Geneva (3 matches) is listed, Zurich (12) is read in page order.
    expect((await plan('City:Geneva', 3)).kind).to.equal('postings');
    expect((await plan('City:Zurich', 3)).kind).to.equal('scan');
    expect((await plan('Employees>=12', 3)).kind).to.equal('postings');
    expect((await plan('Employees>=2', 3)).kind).to.equal('scan');
    for (const q of ['City:Geneva', 'City:Zurich', 'Employees>=12', 'Employees>=2']) {
      expect(await names(q, 3), q).to.deep.equal(await names(q, -1));
    }
    expect(await names('City:Geneva', 3)).to.deep.equal(['Company 12', 'Company 13', 'Company 14']);
  });

  it('drives an && by its fewest matches and checks the rest on them', async () => {
    // Zurich alone is too common at limit 3, "rare" is not: the && is listed.
    expect((await plan('City:Zurich && rare', 3)).kind).to.equal('postings');
    expect(await names('City:Zurich && rare', 3)).to.deep.equal(['Rare Widgets']);
    expect(await names('Public:true && Employees<=4 && zurich', 3)).to.deep.equal(['Company 0', 'Company 2', 'Rare Widgets']);
  });

  it('reads in page order what no index lists: timestamps, short text, an || with such a branch', async () => {
    expect((await plan('created_at>2026-11-22')).kind).to.equal('scan');
    expect((await plan('zu')).kind).to.equal('scan');
    expect((await plan('City:Geneva || created_at>2026-11-22')).kind).to.equal('scan');
    // ...unless another branch of an && lists them.
    expect((await plan('City:Geneva && created_at>2026-11-22')).kind).to.equal('postings');
    expect(await names('City:Geneva && created_at>2026-11-22T10:00:13Z')).to.deep.equal(['Company 13', 'Company 14']);
  });

  it('searches with no q in page order', async () => {
    expect(await plan('')).to.deep.equal({ kind: 'scan' });
  });
});

describe('search rows carry their entry page key and visibility', () => {
  const suite = entriesSuite();

  /** Each search row of the entry, with what it carries of it. */
  const keysOf = async (entryId: string) => [
    ...(await suite.h.db('entry_values').where({ entry_id: entryId }).select('entry_created_at', 'entry_draft', 'entry_archived')),
    ...(await suite.h.db('entry_links').where({ entry_id: entryId }).select('entry_created_at', 'entry_draft', 'entry_archived')),
  ];

  it('writes them with every value and link, and rewrites them when the flags change', async () => {
    const acme = await suite.fx.company({ Name: 'Acme', City: 'Zurich', Employees: 3 });
    const ada = await suite.fx.contact({ Name: 'Ada', Company: [acme.id], Score: 1 }, { draft: true });
    expect(await keysOf(ada.id)).to.deep.equal([
      { entry_created_at: ada.created_at, entry_draft: 1, entry_archived: 0 },
      { entry_created_at: ada.created_at, entry_draft: 1, entry_archived: 0 },
      { entry_created_at: ada.created_at, entry_draft: 1, entry_archived: 0 },
    ]);
    await suite.h.services.entries.update(suite.t.organizationId, ada.id, { draft: false, archived: true });
    expect(new Set((await keysOf(ada.id)).map((k) => JSON.stringify(k)))).to.deep.equal(
      new Set([JSON.stringify({ entry_created_at: ada.created_at, entry_draft: 0, entry_archived: 1 })]),
    );
    expect(await keysOf(acme.id)).to.have.length(3);
  });

  it('counts each type entries, drafts and archived included', async () => {
    const before = (await suite.h.services.entryTypes.get(suite.t.organizationId, suite.fx.companies.id)).entry_count;
    await suite.fx.company({ Name: 'One' });
    await suite.fx.company({ Name: 'Two' }, { draft: true });
    const three = await suite.fx.company({ Name: 'Three' }, { archived: true });
    await suite.h.services.entries.update(suite.t.organizationId, three.id, { fields: { City: 'Bern' } });
    expect((await suite.h.services.entryTypes.get(suite.t.organizationId, suite.fx.companies.id)).entry_count).to.equal(before + 3);
    expect((await suite.h.services.entries.countByType(suite.t.organizationId))[suite.fx.companies.id]).to.equal(before + 3);
  });
});

describe('trigram counts (search/text-match.ts)', () => {
  const suite = entriesSuite();

  before(async () => {
    for (let i = 0; i < 6; i++) await suite.fx.company({ Name: `abcdef ${i}`, City: i === 0 ? 'xyz' : 'plain' });
  });

  it('splits text into the trigrams the tokenizer makes: characters, not bytes, without control characters', () => {
    expect(trigramsOf('abcd')).to.deep.equal(['abc', 'bcd']);
    expect(trigramsOf('ab')).to.deep.equal([]);
    expect(trigramsOf('zürich')).to.deep.equal(['zür', 'üri', 'ric', 'ich']);
    expect(trigramsOf('a😀bc')).to.deep.equal(['a😀b', '😀bc']);
    expect(trigramsOf('aaaa')).to.deep.equal(['aaa']);
    expect(trigramsOf('ab\u0000cde')).to.deep.equal(['cde']);
  });

  it('counts the values holding trigrams when there are fewer than its sample, and remembers counts for a while', async () => {
    let now = 0;
    const stats = new TrigramStats(suite.h.db, { sample: 100, ttlMs: 1000, maxEntries: 10, now: () => now });
    expect(await stats.estimate(['xyz'])).to.equal(1);
    expect(await stats.estimate(['abc'])).to.equal(6);
    expect(await stats.estimate(['abc', 'xyz'])).to.equal(0); // no one value holds both
    await suite.fx.company({ Name: 'xyz again' });
    expect(await stats.estimate(['xyz'])).to.equal(1);
    now = 1000;
    expect(await stats.estimate(['xyz'])).to.equal(2);
  });

  it('estimates from how far into the values its sample reaches when there are more', async () => {
    const stats = new TrigramStats(suite.h.db, { sample: 3, ttlMs: 0, maxEntries: 10 });
    const values = Number((await suite.h.db('entry_values').count({ n: '*' }).first())!.n);
    // Each company's Name ("abcdef …") and City are values 1 and 2, 3 and 4, …: the third
    // value holding "abc" is value 5, so "abc" is estimated at 3 in 5 of all the values.
    expect(await stats.estimate(['abc'])).to.equal(Math.round((3 * values) / 5));
    expect(await stats.estimate(['plain'.slice(0, 3)])).to.equal(Math.round((3 * values) / 8));
  });

  it('looks text up by its rarest trigrams and estimates by all of them together', async () => {
    const stats = new TrigramStats(suite.h.db, { sample: 100, ttlMs: 60_000, maxEntries: 100 });
    // "ef " is in six values, "f 0" in one: only the rare one is asked for.
    expect(await stats.lookup('ef 0')).to.deep.equal({ trigrams: ['f 0'], estimate: 1 });
    // Two trigrams as rare as each other are both asked for, and counted together.
    expect(await stats.lookup('abcdef')).to.deep.equal({ trigrams: ['abc', 'bcd', 'cde', 'def'], estimate: 6 });
    // No value holds "bcx" or "cxy": nothing to read.
    expect((await stats.lookup('abcxyz'))?.estimate).to.equal(0);
    expect(await stats.lookup('ab')).to.equal(undefined);
  });
});
