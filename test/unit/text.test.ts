import { expect } from 'chai';
import { cutText } from '../../src/lib/text.js';
import { sanitizeFilename } from '../../src/requests/attachments/fetch.js';
import { keep } from '../../src/agents/trace.js';

describe('cutText()', () => {
  it('keeps text within the limit as it is, and cuts longer text to the limit in UTF-16 units', () => {
    expect(cutText('abc', 3)).to.equal('abc');
    expect(cutText('abcdef', 3)).to.equal('abc');
    expect(cutText('ab😀', 4)).to.equal('ab😀');
  });

  it('leaves out a character of two units whose second unit is past the limit, rather than keep half of it', () => {
    expect(cutText('ab😀cd', 3)).to.equal('ab');
    expect(cutText('ab😀cd', 4)).to.equal('ab😀');
    expect(cutText('😀😀', 1)).to.equal('');
  });

  it('is what file names and traces are cut with: no lone surrogate is left to store', () => {
    const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
    expect(sanitizeFilename(`${'n'.repeat(254)}😀.pdf`)).to.equal('n'.repeat(254));
    expect(keep(`${'t'.repeat(3999)}😀 and more`)).to.match(/^t{3999}… \(cut: \d+ characters in all\)$/);
    expect(loneSurrogate.test(keep(`${'t'.repeat(3999)}😀 and more`)!)).to.equal(false);
  });
});
