/**
 * `text` cut to at most `max` UTF-16 code units (what `.length` counts and what the columns'
 * checks count) without ending inside a surrogate pair: an emoji cut in half is a lone
 * surrogate, which SQLite stores as invalid UTF-8 and PostgreSQL's driver turns into U+FFFD.
 */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  // A high surrogate last: its pair's other half is past the cut.
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

/** `text` cut to `max` (`cutText`) with a note of its whole length when it was longer: what a trace or a model is shown of a long value. */
export function cutNoted(text: string, max: number): string {
  return text.length > max ? `${cutText(text, max)}… (cut: ${text.length} characters in all)` : text;
}

/**
 * `text` with each lone surrogate (half an emoji, which JSON's `\ud800` escapes can write) as
 * U+FFFD, as PostgreSQL's driver stores it; SQLite would store it as invalid UTF-8 and read back
 * three U+FFFD. Node 20 has `String.prototype.toWellFormed`; the ES2022 library types do not declare it.
 */
export function wellFormed(text: string): string {
  return (text as string & { toWellFormed(): string }).toWellFormed();
}

/** A JSON text's escape of half a surrogate pair (`\ud800`–`\udfff`): only a body that has one needs `wellFormedTexts`. */
export const ESCAPED_SURROGATE = /\\u[dD][89a-fA-F]/;

/**
 * Every text in a parsed JSON body made well-formed (`wellFormed`), so that both
 * databases store the same characters. A loop, not recursion: bodies may nest deeper than the stack.
 */
export function wellFormedTexts(body: unknown): unknown {
  if (typeof body === 'string') return wellFormed(body);
  const open: unknown[] = [body];
  for (let value = open.pop(); value !== undefined; value = open.pop()) {
    if (typeof value !== 'object' || value === null) continue;
    const holder = value as Record<string, unknown>;
    for (const key of Object.keys(holder)) {
      const inner = holder[key];
      if (typeof inner === 'string') holder[key] = wellFormed(inner);
      else if (typeof inner === 'object' && inner !== null) open.push(inner);
    }
  }
  return body;
}
