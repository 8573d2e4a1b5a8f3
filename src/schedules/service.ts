import type { Db } from '../db/knex.js';
import type { PageAt } from '../db/keyset.js';
import { dialectOf } from '../db/dialect.js';
import type { Actor, AuditLog } from '../audit/service.js';
import type { Logger } from '../logger.js';
import { type Clock, isoNow } from '../lib/clock.js';
import { UUID_PATTERN, newId } from '../lib/ids.js';
import { HttpError, NotFoundError, ValidationError } from '../http/errors.js';
import { parseSubmitRequestBody } from '../requests/schemas.js';
import type { RequestService } from '../requests/service.js';
import { titleFromSummary } from '../requests/title.js';
import { messages as scribeMessages, type ScribeService } from '../scribes/service.js';
import { checkCron, describeCron, describeStored, latestFireAtOrBefore, nextFireAfter, nextFires } from './cron.js';
import * as queries from './queries.js';
import { createScheduleFires, defaultScheduleOptions, type ScheduleOptions } from './queue.js';
import { OVERLAP_POLICIES, type FireRow, type OverlapPolicy, type ScheduleListRow, type ScheduleRow } from './queries.js';

export const messages = {
  scheduleNotFound: 'Schedule not found',
  invalidOverlap: `Overlap must be one of ${OVERLAP_POLICIES.join(', ')}`,
  previousStillRunning: (status: string) => `Previous fire's task is still ${status}`,
  previousReceiptPending: (status: string) => `Previous fire's receipt is still ${status}`,
};

/** A schedule as staff write it: the task template and when to submit it. */
export interface ScheduleInput {
  cron: string;
  timezone?: string;
  overlap?: string;
  summary: string;
  title?: string | null;
  acceptance_criteria?: string | null;
}

export type ScheduleService = ReturnType<typeof createScheduleService>;

/** Task states during which an overlap `skip` schedule does not fire again. */
const RUNNING_TASK = new Set(['open', 'in_progress', 'waiting']);
const PENDING_RECEIPT = new Set(['accepted', 'dispatched']);

/** How a schedule acts in the audit log and on the receipts it submits. */
function scheduleActor(schedule: ScheduleRow): Actor {
  return { type: 'schedule', id: schedule.id, label: `schedule: ${schedule.title || titleFromSummary(schedule.summary)}`, organizationId: schedule.organization_id };
}

/**
 * Schedules: a scribe's task template submitted on a cron expression in a time zone
 * (schedules/cron.ts), through the same path as `POST .../requests`. A fire happens once per
 * (schedule, fire time) however many processes run: a claim keeps each due schedule to one
 * process, and the fire's row (unique on schedule and fire time) is written in the receipt's
 * own transaction, so a second try of the same fire time creates nothing. Fire times missed
 * while no process ran are caught up by one fire, for the latest of them.
 */
export function createScheduleService({
  db,
  clock,
  logger,
  audit,
  requests,
  scribes,
  options = defaultScheduleOptions,
}: {
  db: Db;
  clock: Clock;
  logger: Logger;
  audit: AuditLog;
  requests: RequestService;
  scribes: ScribeService;
  options?: ScheduleOptions;
}) {
  const isUniqueViolation = (err: unknown) => dialectOf(db).isUniqueViolation(err);

  /** The input checked as the API checks a task (same rules, same messages), and the expression and zone. */
  function check(input: ScheduleInput) {
    const overlap = input.overlap ?? 'skip';
    const when = checkCron({ cron: input.cron, timezone: input.timezone?.trim() || 'UTC' });
    if (!(OVERLAP_POLICIES as readonly string[]).includes(overlap)) throw new ValidationError(messages.invalidOverlap);
    const { task } = parseSubmitRequestBody({ task: { summary: input.summary, title: input.title || null, acceptance_criteria: input.acceptance_criteria || null } });
    return { ...when, overlap: overlap as OverlapPolicy, summary: task.summary, title: task.title ?? null, acceptance_criteria: task.acceptance_criteria ?? null };
  }

  async function get(organizationId: string, id: string): Promise<ScheduleListRow> {
    const schedule = UUID_PATTERN.test(id) ? await queries.findSchedule(db, organizationId, id) : undefined;
    if (!schedule) throw new NotFoundError(messages.scheduleNotFound);
    return schedule;
  }

  /** Records `action` on the schedule in the audit log (in `trx` when given). */
  async function changed(actor: Actor, action: string, schedule: ScheduleRow, detail?: string, trx: Db = db): Promise<void> {
    await audit.record(actor, action, { type: 'schedule', id: schedule.id }, detail, trx);
  }

  /**
   * Fires `schedule` for `fireAt` in one transaction with its receipt: the fire's row, the
   * receipt, and their audit events. Skipped fires (scribe not active, previous task still
   * running) are recorded with their reason. Undefined when this fire time was already fired.
   */
  async function fire(schedule: ScheduleRow, fireAt: Date, extra: { runBy: Actor | null; missedSince: string | null }): Promise<FireRow | undefined> {
    const { runBy } = extra;
    const base = {
      id: newId(),
      schedule_id: schedule.id,
      fire_at: fireAt.toISOString(),
      fired_at: isoNow(clock),
      missed_since: extra.missedSince,
      manual: runBy !== null,
      run_by_type: runBy?.type ?? null,
      run_by: runBy?.label ?? null,
    };
    const skip = async (reason: string) => {
      const row: FireRow = { ...base, outcome: 'skipped', reason, request_id: null };
      const recorded = await db.transaction(async (trx) => {
        if (!(await queries.insertFire(trx, row, isUniqueViolation))) return false;
        await changed(scheduleActor(schedule), 'schedule.fire', schedule, `skipped: ${reason}`, trx);
        return true;
      });
      return recorded ? row : undefined;
    };

    const scribe = await scribes.find(schedule.scribe_id);
    if (scribe?.state !== 'active') return skip(scribeMessages.scribeNotActive);
    if (schedule.overlap === 'skip' && !runBy) {
      const previous = await queries.latestSubmittedFire(db, schedule.id);
      if (previous && PENDING_RECEIPT.has(previous.request_status)) return skip(messages.previousReceiptPending(previous.request_status));
      if (previous?.task_status && RUNNING_TASK.has(previous.task_status)) return skip(messages.previousStillRunning(previous.task_status));
    }

    const body = { task: { summary: schedule.summary, title: schedule.title, acceptance_criteria: schedule.acceptance_criteria } };
    let row: FireRow | undefined;
    try {
      await requests.submit(scribe, body, {
        actor: scheduleActor(schedule),
        origin: { type: 'schedule', id: schedule.id },
        alongside: async (trx, receipt) => {
          const submitted: FireRow = { ...base, outcome: 'submitted', reason: null, request_id: receipt.id };
          // Already fired (a lapsed claim taken over): roll the receipt back with the transaction.
          if (!(await queries.insertFire(trx, submitted, isUniqueViolation))) throw new AlreadyFired();
          await changed(scheduleActor(schedule), 'schedule.fire', schedule, receipt.id, trx);
          row = submitted;
        },
      });
    } catch (err) {
      if (err instanceof AlreadyFired) return undefined;
      // A rule of the submit path (the scribe stopped being active meanwhile): recorded as a skip.
      if (err instanceof HttpError && err.status === 422) return skip(err.message);
      throw err;
    }
    return row;
  }

  /**
   * Fires one claimed schedule if it is due, and moves it to its next fire time. A stored
   * expression that cannot be computed (see checkCron) is not fired: the schedule is left
   * without a next fire time until staff edit it, and its page says why.
   */
  async function fireDue(schedule: ScheduleRow, token: string): Promise<FireRow | undefined> {
    try {
      checkCron(schedule);
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      logger.warn({ scheduleId: schedule.id, reason: err.message }, 'schedule not fired: its expression cannot be computed');
      await queries.finishFiring(db, { id: schedule.id, token }, { nextRunAt: null, lastFireAt: null });
      return undefined;
    }
    const now = clock();
    const due = new Date(schedule.next_run_at!);
    // Catch-up: only the latest fire time that has passed is fired, once.
    const fireAt = latestFireAtOrBefore(schedule, now, due);
    const fired = fireAt >= due ? await fire(schedule, fireAt, { runBy: null, missedSince: fireAt > due ? due.toISOString() : null }) : undefined;
    const next = nextFireAfter(schedule, now);
    await queries.finishFiring(db, { id: schedule.id, token }, { nextRunAt: next.toISOString(), lastFireAt: fired ? fired.fire_at : null });
    return fired;
  }

  const firing = createScheduleFires({ db, clock, logger, options, fireDue });

  return {
    /** The expression in words and its next fire times, for the console's preview. */
    preview(cron: string, timezone: string, count = 5): { description: string; next: Date[] } {
      const when = checkCron({ cron, timezone });
      return { description: describeCron(when.cron), next: nextFires(when, clock(), count) };
    },

    /** A stored schedule's expression in words, or "invalid expression" (never throws). */
    describe: describeStored,

    async create(actor: Actor, scribeSlug: string, input: ScheduleInput): Promise<ScheduleRow> {
      const scribe = await scribes.getBySlug(actor.organizationId, scribeSlug);
      const checked = check(input);
      const now = clock();
      const row: ScheduleRow = {
        id: newId(),
        organization_id: actor.organizationId,
        scribe_id: scribe.id,
        ...checked,
        paused: false,
        next_run_at: nextFireAfter(checked, now).toISOString(),
        claim_token: null,
        lease_until: null,
        last_fire_at: null,
        created_at: now.toISOString(),
        updated_at: now.toISOString(),
      };
      await db.transaction(async (trx) => {
        await queries.insertSchedule(trx, row);
        await changed(actor, 'schedule.create', row, `${row.cron} (${row.timezone})`, trx);
      });
      return row;
    },

    /** Changes the expression, zone, overlap or template; the next fire time follows the new expression. */
    async update(actor: Actor, id: string, input: ScheduleInput): Promise<ScheduleRow> {
      const schedule = await get(actor.organizationId, id);
      const checked = check(input);
      const now = clock();
      const change = { ...checked, next_run_at: schedule.paused ? null : nextFireAfter(checked, now).toISOString(), updated_at: now.toISOString() };
      await queries.updateSchedule(db, id, change);
      await changed(actor, 'schedule.update', schedule, `${checked.cron} (${checked.timezone})`);
      return { ...schedule, ...change };
    },

    async pause(actor: Actor, id: string): Promise<ScheduleRow> {
      const schedule = await get(actor.organizationId, id);
      const change = { paused: true, next_run_at: null, updated_at: isoNow(clock) };
      await queries.updateSchedule(db, id, change);
      await changed(actor, 'schedule.pause', schedule);
      return { ...schedule, ...change };
    },

    /**
     * Resumes from now: fire times that passed while paused are not caught up. A stored
     * expression that cannot be computed is refused (422) until the schedule is edited.
     */
    async resume(actor: Actor, id: string): Promise<ScheduleRow> {
      const schedule = await get(actor.organizationId, id);
      const now = clock();
      const change = { paused: false, next_run_at: nextFireAfter(checkCron(schedule), now).toISOString(), updated_at: now.toISOString() };
      await queries.updateSchedule(db, id, change);
      await changed(actor, 'schedule.resume', schedule);
      return { ...schedule, ...change };
    },

    /**
     * Submits the schedule's task now, whatever its overlap policy and even while paused
     * (staff asked for it), recorded among the fires with who ran it and as the last fire;
     * a scribe that is not active refuses it (422) and the refusal is recorded too.
     */
    async runNow(actor: Actor, id: string): Promise<FireRow> {
      const schedule = await get(actor.organizationId, id);
      await changed(actor, 'schedule.run_now', schedule);
      const fired = await fire(schedule, clock(), { runBy: actor, missedSince: null });
      // Two runs in the same millisecond are one fire.
      if (!fired) throw new ValidationError('This schedule was just run; try again');
      await queries.recordLastFire(db, schedule.id, fired.fire_at);
      if (fired.outcome === 'skipped') throw new ValidationError(fired.reason!);
      return fired;
    },

    /** Deletes the schedule and its fires; its receipts and the audit log stay. */
    async remove(actor: Actor, id: string): Promise<void> {
      const schedule = await get(actor.organizationId, id);
      await db.transaction(async (trx) => {
        await queries.deleteSchedule(trx, id);
        await changed(actor, 'schedule.delete', schedule, `${schedule.cron} (${schedule.timezone})`, trx);
      });
    },

    get,

    /** The schedule's organization, for the admin CLI (which names a schedule by id alone). */
    async organizationOf(id: string): Promise<string> {
      const schedule = UUID_PATTERN.test(id) ? await queries.findScheduleById(db, id) : undefined;
      if (!schedule) throw new NotFoundError(messages.scheduleNotFound);
      return schedule.organization_id;
    },

    list: (organizationId: string, scribeId?: string) => queries.listSchedules(db, organizationId, scribeId),

    fires: (scheduleId: string, limit = 50) => queries.listFires(db, scheduleId, limit),
    /** A page of the schedule's fires, latest first, for the console's pager. */
    firePage: (scheduleId: string, at: PageAt, limit: number) => queries.pageFires(db, scheduleId, at, limit),

    fireOfRequest: (requestId: string) => queries.findFireOfRequest(db, requestId),

    /** Fires every due schedule (a claimed batch at a time, schedules/queue.ts); never throws. */
    tick: () => firing.tick(),
    /** The schedules' queue, for the process's background work. */
    firing,
  };
}

class AlreadyFired extends Error {}
