import MarkdownIt, { type StateCore, type Token } from 'markdown-it';

/** The link schemes a reply may use; anything else (javascript:, data:, vbscript:) stays text. */
const SAFE_SCHEMES = /^(https?:|mailto:)/i;
/** A console path: one slash, so `//host` (another site) is not one. */
const CONSOLE_PATH = /^\/(?!\/)/;

/**
 * Receipt ids, and uuids after the word "entry", in a reply's text: the things a scribe names
 * that have a console page of their own.
 */
const NAMED = /\b(req_[0-9A-HJKMNP-TV-Z]{26})\b|\b(entry\s+)([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/gi;

// Raw HTML off: a reply's tags are shown as the text they are. Images off: the console's
// policy loads none from elsewhere, and an image is a request the reader did not choose.
const md = new MarkdownIt('default', { html: false, linkify: true, typographer: false, breaks: true });
md.disable('image');
md.validateLink = (url: string) => {
  const target = url.trim();
  return SAFE_SCHEMES.test(target) || CONSOLE_PATH.test(target);
};

// Links to elsewhere open without handing over this page or its address.
const defaultLinkOpen = md.renderer.rules.link_open ?? ((tokens, i, options, _env, self) => self.renderToken(tokens, i, options));
md.renderer.rules.link_open = (tokens, i, options, env, self) => {
  const href = String(tokens[i]!.attrGet('href') ?? '');
  if (!CONSOLE_PATH.test(href)) tokens[i]!.attrSet('rel', 'nofollow noopener noreferrer');
  return defaultLinkOpen(tokens, i, options, env, self);
};

/** Splits the text tokens outside links and code into text and links to the pages of what they name. */
function linkNamed(state: StateCore): void {
  for (const block of state.tokens) {
    if (block.type !== 'inline' || !block.children) continue;
    const out: Token[] = [];
    let inLink = 0;
    for (const token of block.children) {
      if (token.type === 'link_open') inLink++;
      if (token.type === 'link_close') inLink--;
      if (token.type !== 'text' || inLink > 0) {
        out.push(token);
        continue;
      }
      let last = 0;
      for (const match of token.content.matchAll(NAMED)) {
        const [whole, receipt, word, entry] = match;
        const start = match.index + (word?.length ?? 0);
        out.push(text(state, token.content.slice(last, start)));
        const open = new state.Token('link_open', 'a', 1);
        open.attrs = [['href', receipt ? `/receipts/${receipt}` : `/entries/${entry!.toLowerCase()}`]];
        out.push(open, text(state, receipt ?? entry!), new state.Token('link_close', 'a', -1));
        last = match.index + whole.length;
      }
      out.push(last === 0 ? token : text(state, token.content.slice(last)));
    }
    block.children = out;
  }
}
md.core.ruler.push('link_named', linkNamed);

/**
 * A table column's alignment as a class (`align-right`), not the inline style markdown-it
 * writes: the console's Content-Security-Policy allows no inline styles, so the browser
 * dropped them (and reported each one).
 */
function alignByClass(state: StateCore): void {
  for (const token of state.tokens) {
    if (token.type !== 'th_open' && token.type !== 'td_open') continue;
    const align = /^text-align:(left|center|right)$/.exec(String(token.attrGet('style') ?? ''))?.[1];
    if (!align) continue;
    token.attrs = (token.attrs ?? []).filter(([name]) => name !== 'style');
    token.attrJoin('class', `align-${align}`);
  }
}
md.core.ruler.push('align_by_class', alignByClass);

function text(state: StateCore, content: string): Token {
  const token = new state.Token('text', '', 0);
  token.content = content;
  return token;
}

/**
 * A reply or a task's result as HTML: Markdown (lists, code, links) with raw HTML shown as
 * text, links only to http, https, mailto and the console's own pages, and receipt and entry
 * ids linked to their pages.
 */
export function markdown(source: string | null | undefined): string {
  return source ? md.render(source).trimEnd() : '';
}
