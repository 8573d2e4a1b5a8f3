import { format, parse } from 'content-type';

/**
 * HTTP's grammar of a media type (RFC 9110, section 8.3.1): `type/subtype`, then parameters
 * `; name=value`, each value a token or a quoted string, spaces or tabs around each `;`. The
 * `content-type` package (Express's own) parses leniently: it drops a parameter without a
 * value and reads `a=b c` as `a="b c"`, so the grammar is checked here first.
 */
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const QUOTED = '"(?:[\\t !#-\\[\\]-~\\x80-\\xff]|\\\\[\\t -~\\x80-\\xff])*"';
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*(?:${TOKEN}=(?:${TOKEN}|${QUOTED}))?)*$`);

/** The media type as `content-type` reads and writes it (lower-cased, in one form), or undefined when it cannot. */
function mediaTypeOf(text: string): string | undefined {
  try {
    return format(parse(text.trim()));
  } catch {
    return undefined;
  }
}

/** The longest media type kept: the attachments' column (a header's worth, and more than any registered type needs). */
const MAX_MEDIA_TYPE = 255;

/** Whether the text is a media type by HTTP's grammar (`MEDIA_TYPE`), control characters refused, of at most 255 characters. */
export function isMediaType(text: string): boolean {
  const trimmed = text.trim();
  return trimmed.length <= MAX_MEDIA_TYPE && MEDIA_TYPE.test(trimmed) && mediaTypeOf(trimmed) !== undefined;
}

/**
 * The type to serve a stored file with: its media type when it is one, else
 * `application/octet-stream`, whatever the database holds (a header cannot carry a line break).
 */
export function servableMediaType(stored: string): string {
  return mediaTypeOf(stored) ?? 'application/octet-stream';
}
