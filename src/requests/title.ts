export const MAX_GENERATED_TITLE = 80;

/**
 * A title from a summary: its first non-blank line, cut at a word boundary to at most 80
 * characters, with `…` when cut (the ellipsis counts toward the 80).
 */
export function titleFromSummary(summary: string): string {
  const firstLine =
    summary
      .split(/\r?\n/)
      .map((line) => line.trim())
      .find((line) => line !== '') ?? '';
  const line = firstLine.replace(/\s+/g, ' ');
  const chars = [...line];
  if (chars.length <= MAX_GENERATED_TITLE) return line;
  const room = chars.slice(0, MAX_GENERATED_TITLE - 1).join('');
  // Room for 79 and a space next: the cut is at a word boundary already.
  const lastSpace = chars[MAX_GENERATED_TITLE - 1] === ' ' ? room.length : room.lastIndexOf(' ');
  // A single word longer than the limit is cut mid-word rather than dropped.
  const cut = lastSpace > 0 ? room.slice(0, lastSpace) : room;
  return `${cut.trimEnd()}…`;
}
