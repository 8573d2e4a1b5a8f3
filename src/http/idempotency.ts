import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Db } from '../db/knex.js';
import { dialectOf } from '../db/dialect.js';
import type { Clock } from '../lib/clock.js';
import { callerOf } from './api-key-auth.js';
import { BadRequestError, HttpError, ValidationError } from './errors.js';

export const messages = {
  invalidKey: 'Invalid Idempotency-Key',
  reused: 'Idempotency-Key reused with different parameters',
  inProgress: 'A request with this Idempotency-Key is still in progress',
};

/** How long a key is remembered. */
export const KEY_TTL_MS = 24 * 3_600_000;
/** An in-progress record older than this was left by a process that died; it is taken over. */
export const ABANDONED_AFTER_MS = 60_000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export class ConflictError extends HttpError {
  constructor(message: string) {
    super(409, message);
  }
}

/** Saves the response in the same transaction as the work, so a committed result is always replayable. */
export type SaveResponse = (trx: Db, body: unknown) => Promise<void>;

export type Idempotency = ReturnType<typeof createIdempotency>;

/**
 * `Idempotency-Key` on POSTs that create things, with Stripe's semantics: the first
 * request with a key runs and its response (status and body) is saved with what it
 * created; the same key with the same method, path and body replays that response
 * (header `Idempotent-Replayed: true`) and creates nothing; with different parameters →
 * 422; while the first still runs → 409. A request that fails (4xx, 5xx) saves nothing,
 * so it may be retried with the same key. Keys are per organization and kept 24 hours.
 */
export function createIdempotency({ db, clock }: { db: Db; clock: Clock }) {
  /** Claims the key for this request, or says how to answer instead. */
  async function begin(organizationId: string, key: string, hash: string): Promise<{ replay?: { status: number; body: string } }> {
    const now = clock();
    const row = {
      organization_id: organizationId,
      key,
      request_hash: hash,
      state: 'in_progress',
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + KEY_TTL_MS).toISOString(),
    };
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await db('idempotency_keys').insert(row);
        return {};
      } catch (err) {
        if (!dialectOf(db).isUniqueViolation(err)) throw err;
      }
      const existing = await db('idempotency_keys').where({ organization_id: organizationId, key }).first();
      if (!existing) continue; // pruned meanwhile: try again
      const expired = existing.expires_at <= row.created_at;
      const abandoned = existing.state === 'in_progress' && Date.parse(existing.created_at) + ABANDONED_AFTER_MS <= now.getTime();
      if (expired || abandoned) {
        // Take it over, unless another request did so first.
        const taken = await db('idempotency_keys').where({ organization_id: organizationId, key, created_at: existing.created_at }).update(row);
        if (taken) return {};
        continue;
      }
      if (existing.state === 'in_progress') throw new ConflictError(messages.inProgress);
      if (existing.request_hash !== hash) throw new ValidationError(messages.reused);
      return { replay: { status: existing.response_status, body: existing.response_body } };
    }
    throw new ConflictError(messages.inProgress);
  }

  return {
    /**
     * Runs `work` once per key: `work` gets a `save` to call inside the transaction that
     * creates the result, and returns the body to send with `status`. Without the header it
     * just runs.
     */
    async run(req: Request, res: Response, rawBody: unknown, status: number, work: (save: SaveResponse | undefined) => Promise<unknown>): Promise<void> {
      const key = req.get('idempotency-key');
      if (key === undefined) {
        res.status(status).json(await work(undefined));
        return;
      }
      if (!KEY_PATTERN.test(key)) throw new BadRequestError(messages.invalidKey);
      const organizationId = callerOf(req).organizationId;
      const hash = createHash('sha256')
        .update(`${req.method} ${req.baseUrl}${req.path}\n${canonicalJson(rawBody)}`)
        .digest('hex');
      const { replay } = await begin(organizationId, key, hash);
      if (replay) {
        res.status(replay.status).set('Idempotent-Replayed', 'true').type('json').send(replay.body);
        return;
      }
      const save: SaveResponse = async (trx, body) => {
        await trx('idempotency_keys')
          .where({ organization_id: organizationId, key })
          .update({ state: 'done', response_status: status, response_body: JSON.stringify(body) });
      };
      try {
        res.status(status).json(await work(save));
      } catch (err) {
        // Nothing was created (the save shares the work's transaction): forget the key.
        await db('idempotency_keys').where({ organization_id: organizationId, key, state: 'in_progress' }).delete();
        throw err;
      }
    },

    /** Deletes keys past their 24 hours (a cron job). */
    async prune(): Promise<number> {
      return db('idempotency_keys').where('expires_at', '<=', clock().toISOString()).delete();
    },
  };
}

/**
 * JSON with object keys sorted, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are the same request.
 * Written with a stack of its own, not by recursion: a client's body may nest deeper than
 * the call stack goes (a 1 MiB body can nest 500,000 levels).
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  // Pending work, last first: a value still to write, or text to write as it is.
  const pending: Array<{ value: unknown } | string> = [{ value }];
  while (pending.length > 0) {
    const next = pending.pop()!;
    if (typeof next === 'string') {
      out.push(next);
      continue;
    }
    const current = next.value;
    if (Array.isArray(current)) {
      pending.push(']');
      for (let i = current.length - 1; i >= 0; i--) {
        pending.push({ value: current[i] });
        if (i > 0) pending.push(',');
      }
      pending.push('[');
    } else if (current !== null && typeof current === 'object') {
      const entries = Object.entries(current as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      pending.push('}');
      for (let i = entries.length - 1; i >= 0; i--) {
        pending.push({ value: entries[i]![1] }, `${JSON.stringify(entries[i]![0])}:`);
        if (i > 0) pending.push(',');
      }
      pending.push('{');
    } else {
      out.push(JSON.stringify(current) ?? 'null');
    }
  }
  return out.join('');
}
