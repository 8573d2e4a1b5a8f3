import { expect } from 'chai';
import { titleFromSummary } from '../../src/requests/title.js';

describe('titleFromSummary()', () => {
  it('keeps a short first line as it is', () => {
    expect(titleFromSummary('Fix the login page')).to.equal('Fix the login page');
  });
  it('takes the first non-blank line only', () => {
    expect(titleFromSummary('\n  \nFirst line here\nSecond line')).to.equal('First line here');
  });
  it('folds runs of white space', () => {
    expect(titleFromSummary('a\t\tb   c')).to.equal('a b c');
  });
  it('keeps a line of exactly 80 characters whole', () => {
    const line = 'x'.repeat(80);
    expect(titleFromSummary(line)).to.equal(line);
  });
  it('cuts a long line at the last word boundary that leaves room for the ellipsis, within 80 characters', () => {
    // 16 words of four are 79 characters, the 80th a space: all 16 fit with the ellipsis.
    expect(titleFromSummary(`${'word '.repeat(30)}end`)).to.equal(`${'word '.repeat(15)}word…`);
    // 79 characters end inside a word: back to the space before it.
    expect(titleFromSummary(`${'abc '.repeat(19)}abcdef ghi`)).to.equal(`${'abc '.repeat(18)}abc…`);
    // 79 characters end a word, an 80th letter goes on with it: that word is dropped.
    expect(titleFromSummary(`${'x'.repeat(40)} ${'y'.repeat(39)}zz`)).to.equal(`${'x'.repeat(40)}…`);
  });
  it('cuts a single overlong word mid-word rather than dropping it', () => {
    const title = titleFromSummary('y'.repeat(200));
    expect(title).to.equal(`${'y'.repeat(79)}…`);
  });
  it('counts characters, not UTF-16 units', () => {
    const title = titleFromSummary('🙂'.repeat(100));
    expect([...title].length).to.equal(80);
  });
});
