import type { Db } from './knex.js';
import { databaseKindOf, dialectOf } from './dialect.js';
import { migrateToLatest } from './migrate.js';
import { explainOpenFailure } from './open-failure.js';

export const messages = {
  notPostgres: '--to must be a postgres:// or postgresql:// URL',
  notSqlite: 'copy-database copies from a SQLite install (DATABASE_URL is already PostgreSQL)',
  notEmpty: (table: string) => `The target database is not empty (${table} has rows); copy into an empty database`,
};

export class CopyRefusedError extends Error {
  override name = 'CopyRefusedError';
}

/**
 * The tables an install's data lives in, parents before children (foreign keys). Left out:
 * console sign-ins (staff sign in again), rate-limit counters and job runs (both short-lived).
 */
const TABLES = [
  // Which key seals the secrets: the target's processes must be given the same SECRETS_KEY.
  'settings',
  'organizations',
  'api_keys',
  'users',
  'password_links',
  'scribes',
  'mcp_servers',
  'requests',
  'attachments',
  'schedules',
  'schedule_fires',
  'tasks',
  'task_events',
  'sessions',
  'session_messages',
  'stream_events',
  'agent_calls',
  'channels',
  'channel_deliveries',
  'webhook_endpoints',
  'webhook_events',
  'webhook_deliveries',
  'entry_types',
  'entry_type_fields',
  'entries',
  'entry_values',
  'entry_links',
  'audit_events',
  'idempotency_keys',
] as const;

/** How each table is ordered while copied: its primary key (`id` unless named here). */
const KEYS: Partial<Record<(typeof TABLES)[number], string[]>> = {
  settings: ['name'],
  idempotency_keys: ['organization_id', 'key'],
  entry_links: ['entry_id', 'field_id', 'target_entry_id'],
};

/** Tables whose `id` is a sequence on PostgreSQL, moved past the copied ids. */
const SERIAL_TABLES = ['task_events', 'session_messages', 'stream_events', 'agent_calls', 'entry_values', 'audit_events'];

/** Rows per INSERT: well under PostgreSQL's 65,535 parameters for the widest table. */
const BATCH_ROWS = 500;

/**
 * Copies a SQLite install's data into an empty PostgreSQL database (migrated first), in one
 * transaction: ids, timestamps, key and password hashes as they are, so API keys and
 * console passwords keep working. Attachment files stay in DATA_DIR. Returns rows per table.
 */
export async function copyDatabase(source: Db, target: Db, targetUrl: string): Promise<Record<string, number>> {
  if (dialectOf(source).kind !== 'sqlite') throw new CopyRefusedError(messages.notSqlite);
  if (dialectOf(target).kind !== 'postgres') throw new CopyRefusedError(messages.notPostgres);
  // A target out of reach is said in one line naming --to, as a DATABASE_URL out of reach is.
  await target.raw('select 1').catch((err: unknown) => {
    throw explainOpenFailure(err, targetUrl, '--to');
  });
  await migrateToLatest(target);
  for (const table of TABLES) {
    if (await target(table).first()) throw new CopyRefusedError(messages.notEmpty(table));
  }
  const copied: Record<string, number> = {};
  await target.transaction(async (trx) => {
    for (const table of TABLES) {
      copied[table] = 0;
      // In primary-key order, a batch at a time, so a large table never sits in memory whole.
      const key = KEYS[table] ?? ['id'];
      for (let offset = 0; ; offset += BATCH_ROWS) {
        const rows: Array<Record<string, unknown>> = await source(table).orderBy(key).limit(BATCH_ROWS).offset(offset);
        if (rows.length === 0) break;
        await trx(table).insert(rows);
        copied[table] += rows.length;
      }
    }
    for (const table of SERIAL_TABLES) await dialectOf(trx).moveSequencePastRows(trx, table);
  });
  await target.raw('analyze');
  return copied;
}

/** Checks a `--to` value before anything is opened. */
export function checkCopyTarget(url: string): void {
  if (databaseKindOf(url) !== 'postgres') throw new CopyRefusedError(messages.notPostgres);
}
