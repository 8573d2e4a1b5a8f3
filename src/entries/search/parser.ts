/**
 * The grammar of `q` (docs/api.md, Entry search language), by recursive descent:
 *
 *   query := or
 *   or    := and ( "||" and )*
 *   and   := unary ( "&&" unary )*
 *   unary := "(" or ")" | term
 *   term  := everything up to the next && or || or the ")" that closes a group
 *
 * `&&` binds tighter than `||`; white space around operators is ignored; a term may contain
 * spaces, balanced parentheses and double-quoted parts (in which nothing is an operator).
 * A term is `name op value` when it contains one of `:` `>=` `<=` `>` `<` outside quotes,
 * else plain text; whether `name` is a field is decided later, against the entry type.
 */

/**
 * The deepest that groups may nest. Twenty terms need far less; the cap keeps the recursive
 * descent (and everything that walks the tree after it) well clear of the stack's end.
 */
export const MAX_NESTING = 100;

export type ComparisonOperator = ':' | '>' | '>=' | '<' | '<=';

export interface TermNode {
  kind: 'term';
  /** The whole term as written (trimmed), for general text search. */
  text: string;
  /** True when the whole term (or its value) was wrapped in double quotes. */
  quoted: boolean;
  name?: string;
  operator?: ComparisonOperator;
  value?: string;
  position: number;
}

export interface GroupNode {
  kind: 'and' | 'or';
  items: SearchNode[];
  position: number;
}

export type SearchNode = TermNode | GroupNode;

export class SearchSyntaxError extends Error {
  constructor(
    readonly reason: string,
    readonly position: number,
  ) {
    super(`${reason} at position ${position}`);
    this.name = 'SearchSyntaxError';
  }
}

/** Parses `q`; null for an empty or blank query. Throws SearchSyntaxError with a position. */
export function parseSearch(input: string): SearchNode | null {
  const parser = new Parser(input);
  parser.skipSpace();
  if (parser.atEnd()) return null;
  const node = parser.parseOr();
  parser.skipSpace();
  if (!parser.atEnd()) throw parser.unexpected();
  return node;
}

class Parser {
  pos = 0;
  private depth = 0;

  constructor(private readonly input: string) {}

  atEnd(): boolean {
    return this.pos >= this.input.length;
  }

  skipSpace(): void {
    while (!this.atEnd() && /\s/.test(this.input[this.pos]!)) this.pos++;
  }

  private at(token: string): boolean {
    return this.input.startsWith(token, this.pos);
  }

  /** What stands where an operator or the end should be: a stray ")" or text after a group. */
  unexpected(): SearchSyntaxError {
    return this.at(')')
      ? new SearchSyntaxError('unbalanced parenthesis: ")" has no matching "("', this.pos)
      : new SearchSyntaxError('expected "&&" or "||" between terms', this.pos);
  }

  parseOr(): SearchNode {
    return this.parseList('or', '||', () => this.parseAnd());
  }

  private parseAnd(): SearchNode {
    return this.parseList('and', '&&', () => this.parseUnary());
  }

  /** One or more `item`s separated by `operator`. */
  private parseList(kind: 'and' | 'or', operator: string, item: () => SearchNode): SearchNode {
    const first = item();
    const items = [first];
    for (;;) {
      this.skipSpace();
      if (!this.at(operator)) break;
      const operatorAt = this.pos;
      this.pos += operator.length;
      this.skipSpace();
      if (this.atEnd() || this.at('&&') || this.at('||') || this.at(')')) {
        throw new SearchSyntaxError(`expected a term after "${operator}"`, operatorAt);
      }
      items.push(item());
    }
    return items.length === 1 ? first : { kind, items, position: first.position };
  }

  private parseUnary(): SearchNode {
    this.skipSpace();
    if (this.atEnd() || this.at('&&') || this.at('||') || this.at(')')) {
      const found = this.atEnd() ? 'the end' : `"${this.input.slice(this.pos, this.pos + (this.at(')') ? 1 : 2))}"`;
      throw new SearchSyntaxError(`expected a term, found ${found}`, this.pos);
    }
    if (this.at('(')) {
      const open = this.pos;
      if (this.depth === MAX_NESTING) throw new SearchSyntaxError(`parentheses nested more than ${MAX_NESTING} deep`, open);
      this.pos++;
      this.depth++;
      const inner = this.parseOr();
      this.depth--;
      this.skipSpace();
      if (this.atEnd()) throw new SearchSyntaxError('unbalanced parenthesis: "(" is never closed', open);
      if (!this.at(')')) throw this.unexpected();
      this.pos++;
      return inner;
    }
    return this.parseTerm();
  }

  private parseTerm(): TermNode {
    const start = this.pos;
    // Where each "(" of the term still open was: balanced ones are text, an unclosed one an error.
    const opens: number[] = [];
    let quoteAt = -1;
    while (!this.atEnd()) {
      const c = this.input[this.pos]!;
      if (quoteAt >= 0) {
        if (c === '"') quoteAt = -1;
      } else if (c === '"') {
        quoteAt = this.pos;
      } else if (this.at('&&') || this.at('||')) {
        break;
      } else if (c === '(') {
        opens.push(this.pos);
      } else if (c === ')') {
        if (opens.length === 0) break; // closes a group, or is unbalanced: the caller decides
        opens.pop();
      }
      this.pos++;
    }
    if (quoteAt >= 0) throw new SearchSyntaxError('unterminated quote', quoteAt);
    if (opens.length > 0) throw new SearchSyntaxError('unbalanced parenthesis: "(" is never closed', opens[0]!);
    return splitTerm(this.input.slice(start, this.pos).trim(), start);
  }
}

const OPERATORS: readonly ComparisonOperator[] = ['>=', '<=', ':', '>', '<'];

/** Finds the first comparison operator outside quotes and splits the term there. */
function splitTerm(raw: string, position: number): TermNode {
  let inQuote = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === '"') inQuote = !inQuote;
    if (inQuote) continue;
    const operator = OPERATORS.find((op) => raw.startsWith(op, i));
    if (!operator) continue;
    const name = unquote(raw.slice(0, i).trim());
    if (!name.text) break; // ":x" is plain text
    const value = unquote(raw.slice(i + operator.length).trim());
    return { kind: 'term', text: raw, quoted: value.quoted, name: name.text, operator, value: value.text, position };
  }
  const whole = unquote(raw);
  return { kind: 'term', text: whole.text, quoted: whole.quoted, position };
}

function unquote(text: string): { text: string; quoted: boolean } {
  if (text.length >= 2 && text.startsWith('"') && text.endsWith('"') && !text.slice(1, -1).includes('"')) {
    return { text: text.slice(1, -1), quoted: true };
  }
  return { text, quoted: false };
}
