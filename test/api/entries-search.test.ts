import { expect } from 'chai';
import { createHarness, testClock, type Harness, type Tenant } from '../helpers/harness.js';
import { entriesFixture } from '../helpers/entries-fixture.js';

// Every case runs under both plans a search can take (search/compile.ts): matches listed from
// their postings and sorted on their page keys, and entries read in page order, each checked.
for (const plan of [
  { name: 'postings', driveLimit: undefined },
  { name: 'read in page order', driveLimit: -1 },
]) {
  describe(`entry search: q on GET /api/v1/entry_types/:id/entries, ${plan.name}`, () => {
    let h: Harness;
    let t: Tenant;
    const clock = testClock('2026-11-22T10:00:00.000Z');
    const names = new Map<string, string>(); // entry id → Name
    let companiesUrl: string;
    let contactsUrl: string;

    before(async () => {
      h = await createHarness({ env: { READ_THREADS: '2' }, options: { dispatchOnAccept: false, clock, searchDriveLimit: plan.driveLimit } });
      t = await h.tenant();
      const fx = await entriesFixture(h, t);
      const add = async (make: Promise<{ id: string; fields: Record<string, unknown> }>) => {
        const entry = await make;
        names.set(entry.id, entry.fields.Name as string);
        return entry;
      };
      const acme = await add(fx.company({ Name: 'Acme Corp', City: 'Zurich', Employees: 120, Public: true, Founded: '1999-04-01' }));
      const globex = await add(fx.company({ Name: 'Globex', City: 'Geneva', Employees: 45.5, Public: false, Founded: '2010-06-15' }));
      clock.set('2026-11-23T12:00:00.000Z');
      await add(fx.company({ Name: 'Initech', City: 'Zurich Oerlikon', Employees: 30, Public: false, Founded: '2001-02-03' }));
      await add(fx.company({ Name: 'Loss Inc', City: 'Basel', Employees: -3 }));
      await add(fx.company({ Name: '50% Off Ltd', City: 'a_b' }));
      await add(fx.company({ Name: 'Axb Partners', City: 'axb' }));
      clock.set('2026-11-24T08:00:00.000Z');
      await add(fx.company({ Name: 'Umbrella', City: 'Berlin', Employees: 5000, Public: true }, { draft: true }));
      await add(fx.company({ Name: 'Hooli', City: 'Palo Alto', Employees: 900 }, { archived: true }));
      await add(fx.company({ Name: 'Two Lines', City: 'Upper Qwv\nLower Qwv' }, { archived: true }));
      await add(fx.contact({ Name: 'Ada Lovelace', 'Job Title': 'Chief Technology Officer', Company: [acme.id], Score: 9.5 }));
      await add(fx.contact({ Name: 'Bob Builder', 'Job Title': 'Engineer', Company: [globex.id], Score: 7 }));
      await add(fx.contact({ Name: 'Carol', 'Job Title': 'Engineer (Lead)', Company: [acme.id, globex.id], Score: 8 }));
      await add(fx.contact({ Name: 'Dan', Score: -1.25 }));
      companiesUrl = `/api/v1/entry_types/${fx.companies.id}/entries`;
      contactsUrl = `/api/v1/entry_types/${fx.contacts.id}/entries`;
    });
    after(() => h.close());

    async function search(url: string, q: string, extra = ''): Promise<string[]> {
      const res = await h.api.get(`${url}?q=${encodeURIComponent(q)}${extra}`).set(t.headers);
      expect(res.status, `${q}: ${res.text}`).to.equal(200);
      return res.body.data.map((e: { id: string }) => names.get(e.id));
    }
    const companies = (q: string, extra?: string) => search(companiesUrl, q, extra);
    const contacts = (q: string, extra?: string) => search(contactsUrl, q, extra);

    describe('general text', () => {
      it('matches a word in any text field, case-insensitively', async () => {
        expect(await companies('zurich')).to.deep.equal(['Acme Corp', 'Initech']);
        expect(await companies('GENEVA')).to.deep.equal(['Globex']);
      });
      it('matches word prefixes', async () => {
        expect(await companies('acm')).to.deep.equal(['Acme Corp']);
      });
      it('needs every word', async () => {
        expect(await companies('corp acme')).to.deep.equal(['Acme Corp']);
        expect(await companies('acme geneva')).to.deep.equal([]);
      });
      it('treats a quoted term as one phrase', async () => {
        expect(await companies('"zurich oerlikon"')).to.deep.equal(['Initech']);
        expect(await companies('"oerlikon zurich"')).to.deep.equal([]);
      });
      it('matches a phrase across lines of one field, never across two fields', async () => {
        const archived = '&include_archived=true';
        expect(await companies('"qwv\nlower"', archived)).to.deep.equal(['Two Lines']);
        expect(await companies('"v\nl"', archived)).to.deep.equal(['Two Lines']);
        // Name "Acme Corp", City "Zurich"; Name "Two Lines", City "Upper…": the end of one and the start of the other.
        expect(await companies('"corp\nzurich"', archived)).to.deep.equal([]);
        expect(await companies('"p\nz"', archived)).to.deep.equal([]);
        expect(await companies('"lines\nupper"', archived)).to.deep.equal([]);
        expect(await companies('"s\nu"', archived)).to.deep.equal([]);
      });
      it('takes LIKE wildcards literally', async () => {
        expect(await companies('50%')).to.deep.equal(['50% Off Ltd']);
        expect(await companies('a_b')).to.deep.equal(['50% Off Ltd']);
      });
      it('matches pieces shorter than 3 characters too (they bypass the trigram index)', async () => {
        expect(await companies('ac')).to.deep.equal(['Acme Corp']);
        expect(await companies('City:ge')).to.deep.equal(['Globex']);
        expect(await companies('x')).to.deep.equal(['Globex', 'Axb Partners']);
      });
      it('matches inside words as well as at their start', async () => {
        expect(await companies('likon')).to.deep.equal(['Initech']);
      });
      it('treats name:value with an unknown name as general text', async () => {
        expect(await companies('Town:Zurich')).to.deep.equal([]);
      });
      it('returns everything for an empty or blank q', async () => {
        expect(await companies('')).to.have.length(6);
        expect(await companies('   ')).to.have.length(6);
      });
    });

    describe('text fields', () => {
      it('field:value means the field contains the value, both case-insensitively', async () => {
        expect(await companies('City:zur')).to.deep.equal(['Acme Corp', 'Initech']);
        expect(await companies('city:ZURICH OERLIKON')).to.deep.equal(['Initech']);
        expect(await companies('Name:"Acme Corp"')).to.deep.equal(['Acme Corp']);
      });
      it('does not look into other fields', async () => {
        expect(await companies('Name:Zurich')).to.deep.equal([]);
      });
      it('matches a field whose name has a space', async () => {
        expect(await contacts('Job Title:engineer')).to.deep.equal(['Bob Builder', 'Carol']);
        expect(await contacts('job title:CHIEF')).to.deep.equal(['Ada Lovelace']);
      });
      it('keeps balanced parentheses inside a value', async () => {
        expect(await contacts('Job Title:Engineer (Lead)')).to.deep.equal(['Carol']);
      });
    });

    describe('number fields', () => {
      it('field:n is equality', async () => {
        expect(await companies('Employees:120')).to.deep.equal(['Acme Corp']);
        expect(await companies('Employees:45.5')).to.deep.equal(['Globex']);
      });
      it('compares with > >= < <=, decimals and negatives', async () => {
        expect(await companies('Employees>100')).to.deep.equal(['Acme Corp']);
        expect(await companies('Employees>=45.5')).to.deep.equal(['Acme Corp', 'Globex']);
        expect(await companies('Employees<0')).to.deep.equal(['Loss Inc']);
        expect(await companies('Employees<=-3')).to.deep.equal(['Loss Inc']);
        expect(await contacts('Score<-1')).to.deep.equal(['Dan']);
        expect(await contacts('Score>7.99')).to.deep.equal(['Ada Lovelace', 'Carol']);
      });
    });

    describe('comparisons on one field joined by &&', () => {
      it('become one range and still mean the same', async () => {
        expect(await companies('Employees>=30 && Employees<100')).to.deep.equal(['Globex', 'Initech']);
        expect(await companies('Employees>=30 && City:zurich && Employees<100')).to.deep.equal(['Initech']);
        expect(await companies('Founded>2000-01-01 && Founded<2005-01-01')).to.deep.equal(['Initech']);
      });
    });

    describe('boolean fields', () => {
      it('accepts true, false, yes and no in any case', async () => {
        expect(await companies('Public:true')).to.deep.equal(['Acme Corp']);
        expect(await companies('Public:YES')).to.deep.equal(['Acme Corp']);
        expect(await companies('public:false')).to.deep.equal(['Globex', 'Initech']);
        expect(await companies('Public:no')).to.deep.equal(['Globex', 'Initech']);
      });
    });

    describe('date fields', () => {
      it('field:date is that day; comparisons work', async () => {
        expect(await companies('Founded:1999-04-01')).to.deep.equal(['Acme Corp']);
        expect(await companies('Founded>2000-01-01')).to.deep.equal(['Globex', 'Initech']);
        expect(await companies('Founded<=2001-02-03')).to.deep.equal(['Acme Corp', 'Initech']);
      });
    });

    describe('created_at and updated_at', () => {
      it('compare with a day (its 00:00:00.000Z) or a full timestamp', async () => {
        expect(await companies('created_at<2026-11-23')).to.deep.equal(['Acme Corp', 'Globex']);
        expect(await companies('created_at>=2026-11-23 && created_at<2026-11-24')).to.deep.equal(['Initech', 'Loss Inc', '50% Off Ltd', 'Axb Partners']);
        expect(await companies('created_at>2026-11-23T12:00:00Z')).to.deep.equal([]);
        expect(await companies('updated_at>=2026-11-23T12:00:00.000+00:00')).to.have.length(4);
      });
      it('created_at:day means that whole day', async () => {
        expect(await companies('created_at:2026-11-22')).to.deep.equal(['Acme Corp', 'Globex']);
      });
    });

    describe('relationships', () => {
      it('relationship:<primary value> finds entries linked to it, case-insensitively', async () => {
        expect(await contacts('relationship:Acme Corp')).to.deep.equal(['Ada Lovelace', 'Carol']);
        expect(await contacts('relationship:globex')).to.deep.equal(['Bob Builder', 'Carol']);
        expect(await contacts('relationship:"ACME CORP"')).to.deep.equal(['Ada Lovelace', 'Carol']);
      });
      it('needs the whole primary value, not a part', async () => {
        expect(await contacts('relationship:Acme')).to.deep.equal([]);
      });
      it('a relationship field name narrows it to that field', async () => {
        expect(await contacts('Company:Globex')).to.deep.equal(['Bob Builder', 'Carol']);
      });
    });

    describe('combining terms', () => {
      it('&& needs both, || either', async () => {
        expect(await companies('City:Zurich && Employees>100')).to.deep.equal(['Acme Corp']);
        expect(await companies('City:Geneva || Employees<0')).to.deep.equal(['Globex', 'Loss Inc']);
      });
      it('&& binds tighter than ||; parentheses group', async () => {
        expect(await companies('City:Geneva || City:Zurich && Public:true')).to.deep.equal(['Acme Corp', 'Globex']);
        expect(await companies('(City:Geneva || City:Zurich) && Public:true')).to.deep.equal(['Acme Corp']);
        expect(await companies('((City:Geneva))')).to.deep.equal(['Globex']);
      });
      it('ignores white space around operators', async () => {
        expect(await companies('City:Zurich&&Employees>100')).to.deep.equal(['Acme Corp']);
        expect(await companies('  City:Geneva   ||Employees<0  ')).to.deep.equal(['Globex', 'Loss Inc']);
      });
      it('mixes field, general and relationship terms', async () => {
        expect(await contacts('(relationship:Acme Corp || Score<0) && engineer')).to.deep.equal(['Carol']);
      });
    });

    describe('drafts and archived', () => {
      it('stay filtered out under q unless asked for', async () => {
        expect(await companies('Berlin')).to.deep.equal([]);
        expect(await companies('Berlin', '&include_drafts=true')).to.deep.equal(['Umbrella']);
        expect(await companies('Employees>500')).to.deep.equal([]);
        expect(await companies('Employees>500', '&include_drafts=1&include_archived=1')).to.deep.equal(['Umbrella', 'Hooli']);
      });
    });

    describe('large queries: the same answer on every database, never 500', () => {
      const words = (count: number, word: (i: number) => string = () => 'x') => Array.from({ length: count }, (_, i) => word(i)).join(' ');

      it('answers one term of 1,000 one-letter words (repeats ask nothing more)', async () => {
        expect(await companies(words(1000))).to.deep.equal(['Globex', 'Axb Partners']);
        expect(await companies(words(999, (i) => (i % 2 ? 'x' : 'p')))).to.deep.equal(['Axb Partners']);
      });
      it('answers one term of 999 different one-character words', async () => {
        expect(await companies(words(999, (i) => String.fromCharCode(0x4e00 + i)))).to.deep.equal([]);
      });
      it('answers 20 terms, 19 of them of 45 different words, joined by && or by ||', async () => {
        const terms = Array.from({ length: 19 }, (_, k) => `(${words(45, (i) => String.fromCharCode(0x4e00 + k * 45 + i))})`).concat('x');
        expect(await companies(terms.join(' && '))).to.deep.equal([]);
        expect(await companies(terms.join(' || '))).to.deep.equal(['Globex', 'Axb Partners']);
      });
      it('answers groups nested 100 deep', async () => {
        expect(await companies(`${'('.repeat(100)}x${')'.repeat(100)}`)).to.deep.equal(['Globex', 'Axb Partners']);
      });
      it('answers 400 "query is longer than 2000 characters" for 5,000 one-letter words and for 10,000 "("', async () => {
        for (const q of [words(5000).replace(/ /g, '+'), '('.repeat(10_000)]) {
          const res = await h.api.get(`${companiesUrl}?q=${q}`).set(t.headers);
          expect(res.status).to.equal(400);
          expect(res.body).to.deep.equal({ data: null, meta: {}, error: 'Invalid search query: query is longer than 2000 characters' });
        }
      });
    });

    describe('queries that cannot be parsed', () => {
      const cases: Array<[string, string]> = [
        ['City:Zurich &&', 'expected a term after "&&" at position 12'],
        ['|| City:Zurich', 'expected a term, found "||" at position 0'],
        ['a && && b', 'expected a term after "&&" at position 2'],
        ['(City:Zurich', 'unbalanced parenthesis: "(" is never closed at position 0'],
        ['City:Zurich)', 'unbalanced parenthesis: ")" has no matching "(" at position 11'],
        ['Name:acme (corp', 'unbalanced parenthesis: "(" is never closed at position 10'],
        ['(Name:acme (corp || globex)', 'unbalanced parenthesis: "(" is never closed at position 11'],
        ['""', '"" needs text between the quotes at position 0'],
        ['acme && " "', '"" needs text between the quotes at position 8'],
        ['()', 'expected a term, found ")" at position 1'],
        ['(a) b', 'expected "&&" or "||" between terms at position 4'],
        ['Name:"Acme', 'unterminated quote at position 5'],
        ['Employees>abc', 'Employees is a number field; "abc" is not a number at position 0'],
        ['Employees:12abc', 'Employees is a number field; "12abc" is not a number at position 0'],
        ['a || Employees>=', 'Employees is a number field; "" is not a number at position 5'],
        ['Public:maybe', 'Public is a boolean field; "maybe" is not true, false, yes or no at position 0'],
        ['Founded>2020-13-01', 'Founded is a date field; "2020-13-01" is not a date (YYYY-MM-DD) at position 0'],
        ['City>5', 'City is a text field: ">" does not apply; use ":" at position 0'],
        ['City:', '"City:" needs a value at position 0'],
        ['created_at>yesterday', 'created_at needs a date (YYYY-MM-DD) or an ISO 8601 timestamp, not "yesterday" at position 0'],
        ['created_at>2026-02-30T00:00:00Z', 'created_at needs a date (YYYY-MM-DD) or an ISO 8601 timestamp, not "2026-02-30T00:00:00Z" at position 0'],
        ['updated_at<2026-04-31T10:00:00+02:00', 'updated_at needs a date (YYYY-MM-DD) or an ISO 8601 timestamp, not "2026-04-31T10:00:00+02:00" at position 0'],
        ['relationship>x', 'relationship "&gt;" does not apply; use ":" at position 0'.replace('&gt;', '>')],
        [`${'('.repeat(101)}x${')'.repeat(101)}`, 'parentheses nested more than 100 deep at position 100'],
        ['('.repeat(1999), 'parentheses nested more than 100 deep at position 100'],
      ];
      for (const [q, reason] of cases) {
        it(`answers 400 for ${JSON.stringify(q)}`, async () => {
          const res = await h.api.get(`${companiesUrl}?q=${encodeURIComponent(q)}`).set(t.headers);
          expect(res.status).to.equal(400);
          expect(res.body).to.deep.equal({ data: null, meta: {}, error: `Invalid search query: ${reason}` });
        });
      }
    });
  });
}
