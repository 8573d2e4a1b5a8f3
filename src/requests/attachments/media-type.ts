import { format, parse } from 'content-type';

/**
 * The media type as HTTP defines it (`type/subtype`, optional parameters, no control
 * characters), lower-cased, or undefined when the text is none. The `content-type` package
 * that Express itself uses parses leniently and checks when it formats, so both are asked.
 */
export function mediaTypeOf(text: string): string | undefined {
  try {
    return format(parse(text.trim()));
  } catch {
    return undefined;
  }
}

export function isMediaType(text: string): boolean {
  return mediaTypeOf(text) !== undefined;
}

/**
 * The type to serve a stored file with: its media type when it is one, else
 * `application/octet-stream`, whatever the database holds (a header cannot carry a line break).
 */
export function servableMediaType(stored: string): string {
  return mediaTypeOf(stored) ?? 'application/octet-stream';
}
