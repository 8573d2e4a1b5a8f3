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
  it('cuts a long line at a word boundary to at most 80 characters with an ellipsis', () => {
    const summary = `${'word '.repeat(30)}end`;
    const title = titleFromSummary(summary);
    expect(title.endsWith('word…')).to.equal(true);
    expect([...title].length).to.be.at.most(80);
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
