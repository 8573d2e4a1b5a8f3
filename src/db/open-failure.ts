import { databaseKindOf } from './dialect.js';

/**
 * The database cannot be reached or opened at all. Entry points say it in one line and exit 1,
 * as for a taken port: a stack trace there says nothing an operator can act on.
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
 * `err` as a DatabaseUnreachableError when it says the database at `location` cannot be reached
 * or opened; else `err` itself. The message names the host, port and database, never the URL's
 * user or password.
 */
export function explainOpenFailure(err: unknown, location: string): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return err;
  if (databaseKindOf(location) === 'sqlite') {
    return code === 'SQLITE_CANTOPEN' ? new DatabaseUnreachableError(`Cannot open the SQLite database ${location}: ${(err as Error).message}.`) : err;
  }
  const reason = NETWORK_REASONS[code] ?? (POSTGRES_REFUSALS.has(code) ? (err as Error).message : undefined);
  if (reason === undefined) return err;
  const url = new URL(location);
  return new DatabaseUnreachableError(
    `Cannot connect to the database at ${url.hostname}:${url.port || '5432'}${url.pathname} (DATABASE_URL): ${reason}${/[.?]$/.test(reason) ? '' : '.'}`,
  );
}
