import fs from 'node:fs';
import { expect } from 'chai';

/**
 * The fenced `lang` blocks after the `<!-- marker` comment in a Markdown file, up to the end
 * of its section (the next `## ` heading), as written: tests run or check them as a reader
 * would copy them.
 */
export function markedBlocks(file: string, marker: string, lang = 'sh'): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const start = text.indexOf(`<!-- ${marker}`);
  expect(start, `${file} marks its ${marker}`).to.be.greaterThan(-1);
  const end = text.indexOf('\n## ', start);
  return fencedBlocks(text.slice(start, end === -1 ? undefined : end), lang);
}

/** Every fenced `lang` block of a Markdown file, in order. */
export function allBlocks(file: string, lang: string): string[] {
  return fencedBlocks(fs.readFileSync(file, 'utf8'), lang);
}

function fencedBlocks(text: string, lang: string): string[] {
  return [...text.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]!);
}
