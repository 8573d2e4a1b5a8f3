import { BadRequestError } from './errors.js';
import { namesRealTime } from '../lib/clock.js';

export const messages = { invalidCursor: 'Invalid cursor format' };

/** A keyset position: the sort timestamp and id of the last item of a page. */
export interface Position {
  createdAt: string;
  id: string;
}

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** Opaque to clients: base64url of `[createdAt, id]`. */
export function encodeCursor(position: Position): string {
  return Buffer.from(JSON.stringify([position.createdAt, position.id])).toString('base64url');
}

/** The position an optional `after` parameter names: undefined when it is absent. */
export function decodeAfter(after: unknown, isId: (id: string) => boolean): Position | undefined {
  return after === undefined ? undefined : decodeCursor(after, isId);
}

/**
 * A page from the `limit + 1` rows read after a position: the first `limit`, and the cursor
 * of the last of them when the extra row shows that more follow (null exactly then not).
 */
export function keysetPage<T>(
  rows: readonly T[],
  limit: number,
  keyOf: (row: T) => { created_at: string; id: string } = (row) => row as { created_at: string; id: string },
): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  if (rows.length <= limit || last === undefined) return { items, nextCursor: null };
  const key = keyOf(last);
  return { items, nextCursor: encodeCursor({ createdAt: key.created_at, id: key.id }) };
}

/**
 * Decodes a cursor, or throws 400 `Invalid cursor format` for anything that is not a
 * position this list could have produced (`isId` checks the id's form).
 */
export function decodeCursor(cursor: unknown, isId: (id: string) => boolean): Position {
  const invalid = new BadRequestError(messages.invalidCursor);
  if (typeof cursor !== 'string' || !BASE64URL.test(cursor) || cursor.length > 512) throw invalid;
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid;
  }
  if (!Array.isArray(decoded) || decoded.length !== 2) throw invalid;
  const [createdAt, id] = decoded as unknown[];
  if (typeof createdAt !== 'string' || !ISO_MS.test(createdAt) || !namesRealTime(createdAt, Date.parse(createdAt))) throw invalid;
  if (typeof id !== 'string' || !isId(id)) throw invalid;
  return { createdAt, id };
}
