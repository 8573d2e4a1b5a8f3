import type { ClientRateLimitInfo, Options, Store } from 'express-rate-limit';
import type { Db } from '../db/knex.js';
import type { Clock } from '../lib/clock.js';
import { batchPerKey } from '../lib/batch-per-key.js';

/**
 * express-rate-limit's counters in the database, so that a limit counts the calls every
 * process on it answered (a fixed window per key, as the library's memory store keeps).
 * An upsert starts a new window when the old one has ended, or adds to it, and returns the
 * count. At most one upsert per key is under way in a process: the calls that arrive
 * meanwhile are added by the next one together, and each gets its own place in the count,
 * as if they had been added one by one. So a busy key costs a write per round trip, not
 * one per call, and the limit stays exact across processes.
 */
export class DatabaseRateLimitStore implements Store {
  private windowMs = 60_000;
  /** Keys of different limits live in one table. */
  readonly prefix: string;
  readonly localKeys = false;
  /** One upsert per key under way; the calls that come meanwhile are added by the next one. */
  private readonly addCalls = batchPerKey<void, ClientRateLimitInfo>(async (key, calls) => {
    const { hits, resetTime } = await this.add(key, calls.length);
    return calls.map((_, i) => ({ totalHits: hits - calls.length + 1 + i, resetTime }));
  });

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    name: string,
  ) {
    this.prefix = `${name}:`;
  }

  init(options: Options): void {
    this.windowMs = options.windowMs;
  }

  async get(key: string): Promise<ClientRateLimitInfo | undefined> {
    const row = await this.db('rate_limit_hits')
      .where({ key: this.prefix + key })
      .where('reset_at', '>', this.now())
      .first('hits', 'reset_at');
    return row && { totalHits: Number(row.hits), resetTime: new Date(row.reset_at) };
  }

  increment(key: string): Promise<ClientRateLimitInfo> {
    return this.addCalls(key, undefined);
  }

  /** Adds `n` calls to the key's window (a new window when the old one has ended); returns its count. */
  private async add(key: string, n: number): Promise<{ hits: number; resetTime: Date }> {
    const now = this.now();
    const resetAt = new Date(Date.parse(now) + this.windowMs).toISOString();
    const [row] = await this.db('rate_limit_hits')
      .insert({ key: this.prefix + key, hits: n, reset_at: resetAt })
      .onConflict('key')
      .merge({
        hits: this.db.raw('case when rate_limit_hits.reset_at <= ? then ? else rate_limit_hits.hits + ? end', [now, n, n]),
        reset_at: this.db.raw('case when rate_limit_hits.reset_at <= ? then ? else rate_limit_hits.reset_at end', [now, resetAt]),
      })
      .returning(['hits', 'reset_at']);
    return { hits: Number(row.hits), resetTime: new Date(row.reset_at) };
  }

  async decrement(key: string): Promise<void> {
    await this.db('rate_limit_hits')
      .where({ key: this.prefix + key })
      .where('hits', '>', 0)
      .decrement('hits', 1);
  }

  async resetKey(key: string): Promise<void> {
    await this.db('rate_limit_hits')
      .where({ key: this.prefix + key })
      .delete();
  }

  private now(): string {
    return this.clock().toISOString();
  }
}

/** Deletes counters whose window ended before `now`. */
export async function pruneRateLimitHits(db: Db, now: string): Promise<number> {
  return db('rate_limit_hits').where('reset_at', '<=', now).delete();
}
