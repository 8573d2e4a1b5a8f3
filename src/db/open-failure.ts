import { databaseKindOf } from './dialect.js';

/**
 * The database cannot be reached, opened or written at all. Entry points say it in one line and
 * exit 1, as for a taken port: a stack trace there says nothing an operator can act on.
 */
export class DatabaseUnreachableError extends Error {}

// What the network or the driver says when nothing can be done until the operator acts.
const NETWORK_REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused. Is PostgreSQL running there?',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'the host name could not be looked up',
  ETIMEDOUT: 'the connection timed out',
  EHOSTUNREACH: 'the host cannot be reached',
};
// PostgreSQL's own refusals (SQLSTATE), said in its words: a login refused, no such database,
// a server starting up or shutting down.
const POSTGRES_REFUSALS = new Set(['28P01', '28000', '3D000', '57P03']);

/**
 * `err` as a DatabaseUnreachableError when it says the database at `location` cannot be reached,
 * opened or written; else `err` itself. The message names the host, port and database, never
 * the URL's user or password, and `setting`, where the location came from.
 */
export function explainOpenFailure(err: unknown, location: string, setting = 'DATABASE_URL'): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return err;
  if (databaseKindOf(location) === 'sqlite') {
    if (code === 'SQLITE_CANTOPEN') return new DatabaseUnreachableError(`Cannot open the SQLite database ${location}: ${(err as Error).message}.`);
    if (code === 'SQLITE_READONLY') {
      return new DatabaseUnreachableError(`Cannot write the SQLite database ${location}: the service's user may not write the file or its folder (owner and mode).`);
    }
    return err;
  }
  const reason = NETWORK_REASONS[code] ?? (POSTGRES_REFUSALS.has(code) ? (err as Error).message : undefined);
  if (reason === undefined) return err;
  const url = new URL(location);
  return new DatabaseUnreachableError(
    `Cannot connect to the database at ${url.hostname}:${url.port || '5432'}${url.pathname} (${setting}): ${reason}${/[.?]$/.test(reason) ? '' : '.'}`,
  );
}
