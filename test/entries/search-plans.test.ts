import { expect } from 'chai';
import { testClock } from '../helpers/harness.js';
import { onlyOn, stored } from '../helpers/databases.js';
import { entriesSuite } from '../helpers/entries-fixture.js';
import { driveLimitFor, planSearch } from '../../src/entries/search/compile.js';
import { RememberedCounts } from '../../src/entries/search/remembered-counts.js';
import { TrigramStats, trigramsOf } from '../../src/entries/search/text-match.js';
import { textIndexOf } from '../../src/entries/search/text-index.js';
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
  const counts = () => new RememberedCounts({ ttlMs: 60_000, maxEntries: 100 });
  const plan = async (q: string, driveLimit?: number) => planSearch(suite.h.db, await typeOf(), q, { stats: stats(), counts: counts(), driveLimit });
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

  it('reads in page order what no index lists: timestamps, short text', async () => {
    expect((await plan('created_at>2026-11-22')).kind).to.equal('scan');
    expect((await plan('zu')).kind).to.equal('scan');
    expect((await plan('zu || created_at>2026-11-22')).kind).to.equal('scan');
    // ...unless another branch of an && lists them.
    expect((await plan('City:Geneva && created_at>2026-11-22')).kind).to.equal('postings');
    expect(await names('City:Geneva && created_at>2026-11-22T10:00:13Z')).to.deep.equal(['Company 13', 'Company 14']);
  });

  it('lists the branches of an || that an index serves and reads in page order only for the others', async () => {
    // "geneva" is listed; "zu" and the timestamp are read in page order, checked alone.
    const q = 'City:Geneva || zu || created_at>2026-11-22T10:00:11Z';
    expect((await plan(q)).kind).to.equal('postings');
    expect(await names(q)).to.deep.equal(await names(q, -1));
    expect(await names(q)).to.have.length(15);
    const narrow = 'City:Geneva || Name:y 4 || created_at<2026-11-22T10:00:02Z';
    expect((await plan(narrow)).kind).to.equal('postings');
    expect(await names(narrow)).to.deep.equal(['Company 0', 'Company 12', 'Company 13', 'Company 14']);
    expect(await names(narrow)).to.deep.equal(await names(narrow, -1));
    // Inside an &&: the residual still has to pass the other branches.
    const inside = '(City:Geneva || ny) && Employees>=13';
    expect(await names(inside)).to.deep.equal(['Company 13', 'Company 14']);
    expect(await names(inside)).to.deep.equal(await names(inside, -1));
    // Every page of the residual arrives, in page order, whatever the page size.
    const rows = await listEntries(suite.h.db, { entryTypeId: suite.fx.companies.id, includeDrafts: false, includeArchived: false, plan: await plan(q), limit: 3 });
    expect(rows.map((json) => (JSON.parse(json) as { fields: { Name: string } }).fields.Name)).to.deep.equal(['Company 0', 'Company 1', 'Company 2']);
  });

  it('tests many short texts of an || in one pass, next to branches that need none', async () => {
    const q = 'City:zz || Name:y 1 || ny 3 || Employees:7 || created_at<2026-11-22T10:00:01.500Z';
    expect(await names(q)).to.deep.equal(['Company 0', 'Company 1', 'Company 3', 'Company 7', 'Company 10', 'Company 11', 'Company 12', 'Company 13', 'Company 14']);
    expect(await names(q, -1)).to.deep.equal(await names(q));
    // Regular expression characters in a text are themselves.
    expect(await names('x.y || a|b || "(c)" || d* || e+ || [f] || g^ || h$ || i\\ || j{1}', -1)).to.deep.equal([]);
    await suite.fx.company({ Name: 'a|b (c) d*', City: 'x.y' });
    expect(await names('zz || a|b || "(c)" || d*', -1)).to.deep.equal(['a|b (c) d*']);
    expect(await names('zz || x.y || qq', -1)).to.deep.equal(['a|b (c) d*']);
    expect(await names('zz || xay || qq', -1)).to.deep.equal([]);
    await suite.h.db('entries').where({ entry_type_id: suite.fx.companies.id }).whereRaw("search_text like '%a|b%'").delete();
    await suite.h.db('entry_types').where({ id: suite.fx.companies.id }).decrement('entry_count', 1);
  });

  it('answers nothing for an && that asks one boolean field for both values, without reading entries', async () => {
    expect(await names('Public:true && Public:false')).to.deep.equal([]);
    expect(await names('Public:true && City:Zurich && Public:no', -1)).to.deep.equal([]);
    expect(await names('(Public:yes && Public:true && Employees<3) || City:Geneva')).to.deep.equal(['Company 0', 'Company 2', 'Company 12', 'Company 13', 'Company 14']);
  });

  it('answers 400 "Invalid search query: more than 20 terms" above 20 terms, counted through groups', async () => {
    const terms = (n: number) => Array.from({ length: n }, (_, i) => `City:c${i}`);
    expect((await plan(terms(20).join(' || '))).kind).to.be.oneOf(['postings', 'scan']);
    for (const q of [terms(21).join(' || '), `(${terms(10).join(' && ')}) || (${terms(11).join(' || ')})`, `${terms(20).join(' && ')} && ab`]) {
      try {
        await plan(q);
        expect.fail(`planned ${q}`);
      } catch (err) {
        expect((err as Error).message).to.equal('Invalid search query: more than 20 terms');
        expect((err as { status?: number }).status).to.equal(400);
      }
    }
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
      { entry_created_at: ada.created_at, entry_draft: stored(true), entry_archived: stored(false) },
      { entry_created_at: ada.created_at, entry_draft: stored(true), entry_archived: stored(false) },
      { entry_created_at: ada.created_at, entry_draft: stored(true), entry_archived: stored(false) },
    ]);
    await suite.h.services.entries.update(suite.t.organizationId, ada.id, { draft: false, archived: true });
    expect(new Set((await keysOf(ada.id)).map((k) => JSON.stringify(k)))).to.deep.equal(
      new Set([JSON.stringify({ entry_created_at: ada.created_at, entry_draft: stored(false), entry_archived: stored(true) })]),
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

describe('remembered counts of typed values and links (search/remembered-counts.ts)', () => {
  const suite = entriesSuite();
  let now = 0;
  const counts = new RememberedCounts({ ttlMs: 1000, maxEntries: 2, now: () => now });
  const planKind = async (q: string) => {
    const type = await suite.h.services.entryTypes.get(suite.t.organizationId, suite.fx.companies.id);
    const stats = new TrigramStats(suite.h.db, { sample: 100, ttlMs: 0, maxEntries: 0 });
    return (await planSearch(suite.h.db, type, q, { stats, counts, driveLimit: 2 })).kind;
  };

  it('plans from a count until it is older than its TTL, then counts again', async () => {
    await suite.fx.company({ Name: 'Acme', Employees: 7 });
    expect(await planKind('Employees>=7')).to.equal('postings'); // 1 match: listed
    await suite.fx.company({ Name: 'Beta', Employees: 8 });
    await suite.fx.company({ Name: 'Gamma', Employees: 9 });
    expect(await planKind('Employees>=7')).to.equal('postings'); // still counted as 1
    expect(await planKind('Employees>=8')).to.equal('postings'); // another key: counted now, 2
    now = 999;
    expect(await planKind('Employees>=7')).to.equal('postings');
    now = 1000;
    expect(await planKind('Employees>=7')).to.equal('scan'); // 3 matches, over the limit of 2
  });

  it('counts each key once while it is remembered, and forgets every count at maxEntries', async () => {
    const seen: string[] = [];
    const remembered = new RememberedCounts({ ttlMs: 60_000, maxEntries: 2 });
    const count = (key: string) => remembered.get(key, async () => (seen.push(key), seen.length));
    expect([await count('a'), await count('b'), await count('a')]).to.deep.equal([1, 2, 1]);
    expect(await count('c')).to.equal(3); // the cap was reached: forgets a and b
    expect(await count('a')).to.equal(4);
    expect(seen).to.deep.equal(['a', 'b', 'c', 'a']);
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

  it('estimates at most 8 trigrams of a long text, spread over it, and still finds what holds it all', async () => {
    const asked: string[][] = [];
    const stats = new TrigramStats(suite.h.db, { sample: 100, ttlMs: 60_000, maxEntries: 100 });
    const estimate = stats.estimate.bind(stats);
    stats.estimate = async (trigrams) => (asked.push([...trigrams]), estimate(trigrams));
    const text = 'abcdefghijklmnopqrstuvwxyz0123456789';
    const lookup = await stats.lookup(text);
    const singles = asked.filter((t) => t.length === 1).map(([t]) => t!);
    expect(singles).to.have.length(8);
    expect(singles[0]).to.equal('abc');
    expect(new Set(singles).size).to.equal(8);
    expect(singles.every((t) => text.includes(t))).to.equal(true);
    expect(lookup!.trigrams.every((t) => singles.includes(t))).to.equal(true);
  });
});

// FTS5's segments; PostgreSQL's GIN index is kept by autovacuum.
onlyOn('sqlite')('text index maintenance (FTS5 merge)', () => {
  const suite = entriesSuite();

  it('merges the segments that separate writes leave, until none are left, and finds the same values', async () => {
    // Each entry is its own transaction, so each leaves its own segment in the index.
    for (let i = 0; i < 40; i++) await suite.fx.company({ Name: `Company ${i}`, City: i % 10 === 0 ? 'Lugano' : 'Zurich' });
    const lugano = async () => suite.h.db('entry_values_fts').select('rowid').whereRaw('entry_values_fts match ?', ['"uga"']).orderBy('rowid');
    const before = await lugano();
    expect(before).to.have.length(4);

    expect(await textIndexOf(suite.h.db).merge(suite.h.db)).to.be.greaterThan(0);
    expect(await textIndexOf(suite.h.db).merge(suite.h.db)).to.equal(0);
    expect(await lugano()).to.deep.equal(before);
    // FTS5 checks its index against the values it was built from.
    await suite.h.db.raw(`insert into entry_values_fts (entry_values_fts, rank) values ('integrity-check', 1)`);
    const names = await suite.h.services.entries.listJson(await suite.h.services.entryTypes.get(suite.t.organizationId, suite.fx.companies.id), {
      limit: 100,
      q: 'City:lugano',
      includeDrafts: false,
      includeArchived: false,
    });
    expect(names.entries.map((json) => (JSON.parse(json) as { fields: { Name: string } }).fields.Name)).to.deep.equal(['Company 0', 'Company 10', 'Company 20', 'Company 30']);
  });
});
