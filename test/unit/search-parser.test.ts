import { expect } from 'chai';
import { MAX_NESTING, SearchSyntaxError, parseSearch } from '../../src/entries/search/parser.js';
import { resolveSearch } from '../../src/entries/search/resolve.js';

describe('parseSearch()', () => {
  it('returns null for an empty or blank query', () => {
    expect(parseSearch('')).to.equal(null);
    expect(parseSearch(' \t ')).to.equal(null);
  });

  it('splits name, operator and value, keeping positions', () => {
    expect(parseSearch('  Employees >= 10')).to.deep.equal({
      kind: 'term',
      text: 'Employees >= 10',
      quoted: false,
      name: 'Employees',
      operator: '>=',
      value: '10',
      position: 2,
    });
  });

  it('takes the first operator, so values may hold colons', () => {
    expect(parseSearch('Website:https://acme.example')).to.include({ name: 'Website', operator: ':', value: 'https://acme.example' });
  });

  it('keeps spaces in names and values', () => {
    expect(parseSearch('Job Title:Head of Sales')).to.include({ name: 'Job Title', value: 'Head of Sales' });
  });

  it('unquotes values and whole terms, where operators are plain text', () => {
    expect(parseSearch('Name:"a && b || (c)"')).to.include({ name: 'Name', value: 'a && b || (c)', quoted: true });
    expect(parseSearch('"x:y"')).to.include({ text: 'x:y', quoted: true });
    expect(parseSearch('"x:y"')).to.not.have.property('name');
  });

  it('binds && tighter than ||', () => {
    const ast = parseSearch('a || b && c');
    expect(ast).to.deep.include({ kind: 'or' });
    const or = ast as { items: Array<{ kind: string }> };
    expect(or.items.map((i) => i.kind)).to.deep.equal(['term', 'and']);
  });

  it('groups with parentheses', () => {
    const ast = parseSearch('(a || b) && c') as { kind: string; items: Array<{ kind: string }> };
    expect(ast.kind).to.equal('and');
    expect(ast.items.map((i) => i.kind)).to.deep.equal(['or', 'term']);
  });

  it('reports where a query breaks', () => {
    for (const [q, position] of [
      ['a &&', 2],
      ['(a', 0],
      ['a)', 1],
      ['"x', 0],
      ['a || ', 2],
      ['x (y) )', 6],
    ] as const) {
      try {
        parseSearch(q);
        expect.fail(`parsed ${q}`);
      } catch (err) {
        expect(err, q).to.be.instanceOf(SearchSyntaxError);
        expect((err as SearchSyntaxError).position, q).to.equal(position);
      }
    }
  });

  it('refuses groups nested deeper than 100, where the 101st "(" opens, before the stack could run out', () => {
    expect(MAX_NESTING).to.equal(100);
    expect(parseSearch(`${'('.repeat(100)}a${')'.repeat(100)}`)).to.include({ kind: 'term', text: 'a' });
    for (const q of [`${'('.repeat(101)}a${')'.repeat(101)}`, '('.repeat(5000), `a || ${'(b && '.repeat(200)}`]) {
      expect(() => parseSearch(q)).to.throw(SearchSyntaxError, 'parentheses nested more than 100 deep at position');
    }
  });
});

describe('resolveSearch()', () => {
  it('checks each word of general text once, leaving out repeats and words inside other words', () => {
    expect(resolveSearch(parseSearch('x acm X acme cme ZUR x')!, [])).to.deep.equal({ kind: 'words', words: ['x', 'acme', 'zur'] });
    expect(resolveSearch(parseSearch('"x x"')!, [])).to.deep.equal({ kind: 'words', words: ['x x'] });
  });
});
