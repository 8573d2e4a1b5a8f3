import { expect } from 'chai';
import { markdown } from '../../src/console/markdown.js';

describe('markdown() for replies in the console', () => {
  it('renders lists, inline code, code blocks and emphasis', () => {
    expect(markdown('- one\n- `two`\n\n```\nx < y\n```\n\n**bold**')).to.equal(
      '<ul>\n<li>one</li>\n<li><code>two</code></li>\n</ul>\n<pre><code>x &lt; y\n</code></pre>\n<p><strong>bold</strong></p>',
    );
  });

  it('shows raw HTML as text', () => {
    expect(markdown('<script>alert(1)</script> <img src=x onerror=alert(1)>')).to.equal('<p>&lt;script&gt;alert(1)&lt;/script&gt; &lt;img src=x onerror=alert(1)&gt;</p>');
  });

  it('links http, https, mailto and console paths, and leaves javascript:, data:, vbscript: and //host links as text', () => {
    expect(markdown('[a](https://example.com/x)')).to.equal('<p><a href="https://example.com/x" rel="nofollow noopener noreferrer">a</a></p>');
    expect(markdown('[m](mailto:ops@example.com)')).to.equal('<p><a href="mailto:ops@example.com" rel="nofollow noopener noreferrer">m</a></p>');
    expect(markdown('[r](/receipts/req_1)')).to.equal('<p><a href="/receipts/req_1">r</a></p>');
    for (const target of ['javascript:alert(1)', 'JaVaScRiPt:alert(1)', 'data:text/html,x', 'vbscript:x', '//evil.example/x']) {
      expect(markdown(`[x](${target})`), target).not.to.contain('<a ');
    }
  });

  it('does not load images: an image is shown as a link to it', () => {
    expect(markdown('![logo](https://example.com/a.png)')).to.equal('<p>!<a href="https://example.com/a.png" rel="nofollow noopener noreferrer">logo</a></p>');
  });

  it('links receipt ids, and uuids after "entry", to their pages; not inside code or links', () => {
    expect(markdown('Made req_01JABCDEFGHJKMNPQRSTVWXYZ0 from entry 0190A1B2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.')).to.equal(
      '<p>Made <a href="/receipts/req_01JABCDEFGHJKMNPQRSTVWXYZ0">req_01JABCDEFGHJKMNPQRSTVWXYZ0</a> from entry <a href="/entries/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b">0190A1B2-c3d4-7e5f-8a9b-0c1d2e3f4a5b</a>.</p>',
    );
    expect(markdown('`req_01JABCDEFGHJKMNPQRSTVWXYZ0` and session 0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b')).to.equal(
      '<p><code>req_01JABCDEFGHJKMNPQRSTVWXYZ0</code> and session 0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b</p>',
    );
  });

  it("aligns a table's columns by class, not by an inline style the console's CSP would drop", () => {
    expect(markdown('| Item | Amount |\n|:-|-:|\n| Tea | 4.50 |')).to.equal(
      '<table>\n<thead>\n<tr>\n<th class="align-left">Item</th>\n<th class="align-right">Amount</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td class="align-left">Tea</td>\n<td class="align-right">4.50</td>\n</tr>\n</tbody>\n</table>',
    );
  });

  it('renders nothing for an empty or missing text', () => {
    expect([markdown(''), markdown(null), markdown(undefined)]).to.deep.equal(['', '', '']);
  });
});
