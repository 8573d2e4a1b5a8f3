import { randomFillSync } from 'node:crypto';
import { monotonicFactory } from 'ulid';
import { v7 as uuidv7 } from 'uuid';

/**
 * ulid's default source asks the OS for one random byte per character; drawing from a
 * pool refilled 4 KiB at a time gives the same CSPRNG bytes for a fraction of the calls.
 */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;
function pooledRandom(): number {
  if (poolOffset >= pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  return pool[poolOffset++]! / 256;
}

// Monotonic: two receipts made in the same millisecond still sort in creation order.
const nextUlid = monotonicFactory(pooledRandom);

export const REQUEST_ID_PATTERN = /^req_[0-9A-HJKMNP-TV-Z]{26}$/;
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A receipt id: `req_` and a ULID whose time part is `at`. */
export function newRequestId(at: Date): string {
  return `req_${nextUlid(at.getTime())}`;
}

/** An outbound webhook event's id, its deliveries' `webhook-id`: `evt_` and a ULID. */
export function newEventId(at: Date): string {
  return `evt_${nextUlid(at.getTime())}`;
}

/** Time-ordered UUID (v7) for every other record. */
export function newId(): string {
  return uuidv7();
}
