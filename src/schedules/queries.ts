import type { Db } from '../db/knex.js';
import type { Actor } from '../audit/service.js';
import { claimDue, renewLeases, type Queue } from '../db/claims.js';
import { readKeysetPage, type KeysetPage, type PageAt } from '../db/keyset.js';

export const OVERLAP_POLICIES = ['skip', 'allow'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

export interface ScheduleRow {
  id: string;
  organization_id: string;
  scribe_id: string;
  cron: string;
  timezone: string;
  overlap: OverlapPolicy;
  summary: string;
  title: string | null;
  acceptance_criteria: string | null;
  paused: boolean;
  next_run_at: string | null;
  claim_token: string | null;
  lease_until: string | null;
  last_fire_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A schedule with its scribe's slug and name, as lists show it. */
export type ScheduleListRow = ScheduleRow & { scribe_slug: string; scribe_name: string };

export interface FireRow {
  id: string;
  schedule_id: string;
  fire_at: string;
  fired_at: string;
  outcome: 'submitted' | 'skipped';
  reason: string | null;
  request_id: string | null;
  missed_since: string | null;
  manual: boolean;
  /** Who ran it now (a manual fire): the actor's type and label, as the audit log has them. */
  run_by_type: Actor['type'] | null;
  run_by: string | null;
}

/** A fire with what became of its receipt (and the receipt's task). */
export type FireListRow = FireRow & { request_status: string | null; task_id: string | null; task_status: string | null };

/** SQLite hands booleans back as 0/1. */
const withBoolean = <T extends { paused?: unknown; manual?: unknown }>(row: T): T => {
  if ('paused' in row) row.paused = Boolean(row.paused);
  if ('manual' in row) row.manual = Boolean(row.manual);
  return row;
};

export async function insertSchedule(db: Db, row: ScheduleRow): Promise<void> {
  await db('schedules').insert(row);
}

const LIST_COLUMNS = ['schedules.*', 'scribes.slug as scribe_slug', 'scribes.name as scribe_name'];

export async function findSchedule(db: Db, organizationId: string, id: string): Promise<ScheduleListRow | undefined> {
  const row = await db('schedules')
    .join('scribes', 'scribes.id', 'schedules.scribe_id')
    .where({ 'schedules.id': id, 'schedules.organization_id': organizationId })
    .first(...LIST_COLUMNS);
  return row && withBoolean(row);
}

/** For the admin CLI, which names a schedule by id alone. */
export async function findScheduleById(db: Db, id: string): Promise<ScheduleRow | undefined> {
  const row = await db<ScheduleRow>('schedules').where({ id }).first();
  return row && withBoolean(row);
}

/** The organization's schedules (or one scribe's), oldest first. */
export async function listSchedules(db: Db, organizationId: string, scribeId?: string): Promise<ScheduleListRow[]> {
  const query = db('schedules').join('scribes', 'scribes.id', 'schedules.scribe_id').where('schedules.organization_id', organizationId);
  if (scribeId) query.where('schedules.scribe_id', scribeId);
  const rows: ScheduleListRow[] = await query.orderBy([{ column: 'schedules.created_at' }, { column: 'schedules.id' }]).select(...LIST_COLUMNS);
  return rows.map(withBoolean);
}

/**
 * Changes a schedule. Any change ends a claim on it: the process firing it then leaves the
 * next fire time as the change set it.
 */
export async function updateSchedule(db: Db, id: string, change: Partial<ScheduleRow>): Promise<void> {
  await db('schedules')
    .where({ id })
    .update({ ...change, claim_token: null, lease_until: null });
}

export async function deleteSchedule(db: Db, id: string): Promise<void> {
  await db('schedules').where({ id }).delete();
}

// ---- firing -----------------------------------------------------------------------------

/** Schedules whose next fire time has come, not paused and not held by a live claim. */
const fireQueue: Queue = {
  table: 'schedules',
  // (next_run_at, id) where not paused.
  index: 'schedules_due',
  due: (query, now) =>
    query
      .whereRaw('not paused')
      .where('next_run_at', '<=', now)
      .where((q) => q.whereNull('lease_until').orWhere('lease_until', '<=', now)),
  order: ['next_run_at', 'id'],
  leaseColumn: 'lease_until',
};

/** Claims up to `limit` due schedules for `token` (db/claims.ts: no two processes fire one schedule at once). */
export async function claimDueSchedules(db: Db, { now, leaseUntil, token, limit }: { now: string; leaseUntil: string; token: string; limit: number }): Promise<ScheduleRow[]> {
  const rows = await claimDue<ScheduleRow>(db, fireQueue, { now, limit, set: { claim_token: token, lease_until: leaseUntil } });
  return rows.map(withBoolean);
}

export function renewScheduleLeases(db: Db, claim: { ids: readonly string[]; token: string }, leaseUntil: string): Promise<number> {
  return renewLeases(db, fireQueue, claim, leaseUntil);
}

/**
 * Ends a claim: the schedule's next fire time (null if it was paused meanwhile, or when it
 * has none). False if the claim was lost (a change or another process).
 */
export async function finishFiring(db: Db, claim: { id: string; token: string }, next: { nextRunAt: string | null; lastFireAt: string | null }): Promise<boolean> {
  const update: Record<string, unknown> = {
    next_run_at: db.raw('case when paused then null else ? end', [next.nextRunAt]),
    claim_token: null,
    lease_until: null,
  };
  if (next.lastFireAt) update.last_fire_at = laterFire(db, next.lastFireAt);
  return (await db('schedules').where({ id: claim.id, claim_token: claim.token }).update(update)) === 1;
}

/** The later of the schedule's last fire and `fireAt` (a run now may be later than the clock's fire time). */
const laterFire = (db: Db, fireAt: string) => db.raw('case when last_fire_at is null or last_fire_at < ? then ? else last_fire_at end', [fireAt, fireAt]);

/** A fire made outside a claim (run now): the schedule's last fire, unless a later one is recorded. */
export async function recordLastFire(db: Db, id: string, fireAt: string): Promise<void> {
  await db('schedules')
    .where({ id })
    .update({ last_fire_at: laterFire(db, fireAt) });
}

/** Gives a claimed schedule back unfired (its process is stopping): due again at once. */
export async function releaseSchedule(db: Db, claim: { id: string; token: string }): Promise<void> {
  await db('schedules').where({ id: claim.id, claim_token: claim.token }).update({ claim_token: null, lease_until: null });
}

/** Records a fire; false when this (schedule, fire time) was already recorded, by this process or another. */
export async function insertFire(db: Db, row: FireRow, isUniqueViolation: (err: unknown) => boolean): Promise<boolean> {
  try {
    await db('schedule_fires').insert(row);
    return true;
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

/** What became of the schedule's latest submitted fire: its receipt's status and its task's. */
export async function latestSubmittedFire(db: Db, scheduleId: string): Promise<{ request_status: string; task_status: string | null } | undefined> {
  return db('schedule_fires')
    .join('requests', 'requests.id', 'schedule_fires.request_id')
    .leftJoin('tasks', 'tasks.id', 'requests.entity_id')
    .where('schedule_fires.schedule_id', scheduleId)
    .orderBy('schedule_fires.fire_at', 'desc')
    .first('requests.status as request_status', 'tasks.status as task_status');
}

/** A schedule's fires with what became of their receipts, unordered. */
function firesOf(db: Db, scheduleId: string) {
  return db('schedule_fires')
    .leftJoin('requests', 'requests.id', 'schedule_fires.request_id')
    .leftJoin('tasks', 'tasks.id', 'requests.entity_id')
    .where('schedule_fires.schedule_id', scheduleId)
    .select('schedule_fires.*', 'requests.status as request_status', 'tasks.id as task_id', 'tasks.status as task_status');
}

/** A schedule's fires, newest first. */
export async function listFires(db: Db, scheduleId: string, limit: number): Promise<FireListRow[]> {
  const rows: FireListRow[] = await firesOf(db, scheduleId)
    .orderBy([{ column: 'schedule_fires.fire_at', order: 'desc' }])
    .limit(limit);
  return rows.map(withBoolean);
}

/** A page of a schedule's fires, latest fire time first (the console's pager), with their capped total. */
export async function pageFires(db: Db, scheduleId: string, at: PageAt, limit: number): Promise<KeysetPage<FireListRow>> {
  const keyset = { columns: ['schedule_fires.fire_at', 'schedule_fires.id'], keyOf: (row: FireListRow) => [row.fire_at, row.id] };
  const page = await readKeysetPage(db, firesOf(db, scheduleId), keyset, at, limit);
  return { ...page, items: page.items.map(withBoolean) };
}

/** The fire that made a receipt, with its schedule (a receipt's page says where it came from). */
export async function findFireOfRequest(db: Db, requestId: string): Promise<FireRow | undefined> {
  const row = await db<FireRow>('schedule_fires').where({ request_id: requestId }).first();
  return row && withBoolean(row);
}
