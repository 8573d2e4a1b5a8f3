import type { Db } from '../db/knex.js';
import { tokenHash } from '../lib/token-hash.js';
import { readKeysetPage, type KeysetPage, type PageAt } from '../db/keyset.js';
import type { VerifyPreset } from './verify.js';

export const CHANNEL_KINDS = ['webhook', 'email'] as const;
export type ChannelKind = (typeof CHANNEL_KINDS)[number];
export const CHANNEL_MODES = ['task', 'chat'] as const;
export type ChannelMode = (typeof CHANNEL_MODES)[number];

export interface ChannelRow {
  id: string;
  organization_id: string;
  scribe_id: string;
  kind: ChannelKind;
  mode: ChannelMode;
  name: string;
  /** A webhook channel's token as stored: sealed (the service opens it to show the URL). */
  token: string | null;
  /** Its SHA-256, by which the inbound side finds the channel. */
  token_hash: string | null;
  verify: VerifyPreset | null;
  secret: string | null;
  address: string | null;
  enabled: boolean;
  created_at: string;
  updated_at: string;
}

/** A channel with its scribe's slug and name, as lists show it. */
export type ChannelListRow = ChannelRow & { scribe_slug: string; scribe_name: string };

export type DeliveryOutcome = 'created' | 'replayed' | 'refused';

export interface DeliveryRow {
  id: string;
  channel_id: string;
  received_at: string;
  sender: string;
  outcome: DeliveryOutcome;
  status: number;
  reason: string | null;
  request_id: string | null;
  session_id: string | null;
  replay_key: string | null;
}

/** SQLite hands booleans back as 0/1. */
const withBoolean = <T extends { enabled: unknown }>(row: T): T => ({ ...row, enabled: Boolean(row.enabled) });

const LIST_COLUMNS = ['channels.*', 'scribes.slug as scribe_slug', 'scribes.name as scribe_name'];

export async function insertChannel(db: Db, row: ChannelRow): Promise<void> {
  await db('channels').insert(row);
}

export async function findChannel(db: Db, organizationId: string, id: string): Promise<ChannelListRow | undefined> {
  const row = await db('channels')
    .join('scribes', 'scribes.id', 'channels.scribe_id')
    .where({ 'channels.id': id, 'channels.organization_id': organizationId })
    .first(...LIST_COLUMNS);
  return row && withBoolean(row);
}

/** For the admin CLI, which names a channel by id alone. */
export async function findChannelById(db: Db, id: string): Promise<ChannelRow | undefined> {
  const row = await db<ChannelRow>('channels').where({ id }).first();
  return row && withBoolean(row);
}

/** An enabled channel by its webhook token or email address (the inbound side knows nothing else). */
export async function findEnabledChannel(db: Db, by: { token: string } | { address: string }): Promise<ChannelRow | undefined> {
  const where = 'token' in by ? { token_hash: tokenHash(by.token) } : by;
  const row = await db<ChannelRow>('channels').where(where).where({ enabled: true }).first();
  return row && withBoolean(row);
}

/** The organization's channels (or one scribe's), oldest first. */
export async function listChannels(db: Db, organizationId: string, scribeId?: string): Promise<ChannelListRow[]> {
  const query = db('channels').join('scribes', 'scribes.id', 'channels.scribe_id').where('channels.organization_id', organizationId);
  if (scribeId) query.where('channels.scribe_id', scribeId);
  const rows: ChannelListRow[] = await query.orderBy([{ column: 'channels.created_at' }, { column: 'channels.id' }]).select(...LIST_COLUMNS);
  return rows.map(withBoolean);
}

export async function setEnabled(db: Db, id: string, enabled: boolean, at: string): Promise<void> {
  await db('channels').where({ id }).update({ enabled, updated_at: at });
}

export async function setSecret(db: Db, id: string, secret: string, at: string): Promise<void> {
  await db('channels').where({ id }).update({ secret, updated_at: at });
}

/**
 * Records a delivery. One holding a replay key the channel already has is refused by the
 * unique key: then false, and the caller's transaction is rolled back.
 */
export async function insertDelivery(db: Db, row: DeliveryRow, isUniqueViolation: (err: unknown) => boolean): Promise<boolean> {
  try {
    await db('channel_deliveries').insert(row);
    return true;
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

/** The delivery that created something for this replay key. */
export async function findDeliveryByReplayKey(db: Db, channelId: string, replayKey: string): Promise<DeliveryRow | undefined> {
  return db<DeliveryRow>('channel_deliveries').where({ channel_id: channelId, replay_key: replayKey }).first();
}

/** The channel's latest deliveries, newest first. */
export async function listDeliveries(db: Db, channelId: string, limit: number): Promise<DeliveryRow[]> {
  return db<DeliveryRow>('channel_deliveries')
    .where({ channel_id: channelId })
    .orderBy([
      { column: 'received_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(limit);
}

/** A page of the channel's deliveries, newest first (the console's pager), with their capped total. */
export function pageDeliveries(db: Db, channelId: string, at: PageAt, limit: number): Promise<KeysetPage<DeliveryRow>> {
  return readKeysetPage(
    db,
    db<DeliveryRow>('channel_deliveries').where({ channel_id: channelId }),
    { columns: ['received_at', 'id'], keyOf: (row: DeliveryRow) => [row.received_at, row.id] },
    at,
    limit,
  );
}

/** The delivery (with its channel) that created a receipt, for the receipt's page. */
export async function findDeliveryOfRequest(db: Db, requestId: string): Promise<(DeliveryRow & { channel_name: string }) | undefined> {
  return db('channel_deliveries')
    .join('channels', 'channels.id', 'channel_deliveries.channel_id')
    .where({ 'channel_deliveries.request_id': requestId, 'channel_deliveries.outcome': 'created' })
    .first('channel_deliveries.*', 'channels.name as channel_name');
}

/** The delivery (with its channel) that started a session, for the session's page. */
export async function findDeliveryOfSession(db: Db, sessionId: string): Promise<(DeliveryRow & { channel_name: string }) | undefined> {
  return db('channel_deliveries')
    .join('channels', 'channels.id', 'channel_deliveries.channel_id')
    .where({ 'channel_deliveries.session_id': sessionId, 'channel_deliveries.outcome': 'created' })
    .first('channel_deliveries.*', 'channels.name as channel_name');
}
