import type { Db } from '../db/knex.js';
import { type Clock, isoNow } from '../lib/clock.js';
import { type AuditFilter, type SubjectName, findSubjectNames, insertAuditEvent, listAuditActions, listAuditEvents, pageAuditEvents } from './queries.js';
import type { PageAt } from '../db/keyset.js';

export type { AuditFilter, SubjectName };

/** Who did something: a signed-in console user, an API key, the operator at the admin CLI, or a schedule or inbound channel acting on its own. */
export interface Actor {
  type: 'user' | 'api_key' | 'operator' | 'schedule' | 'channel';
  id: string | null;
  /** The user's email or the key's name and prefix, as shown in the log. */
  label: string;
  organizationId: string;
}

export interface AuditEventRow {
  id: number;
  organization_id: string;
  actor_type: Actor['type'];
  actor_id: string | null;
  actor_label: string;
  action: string;
  subject_type: string;
  subject_id: string;
  detail: string | null;
  created_at: string;
}

export type AuditLog = ReturnType<typeof createAuditLog>;

/** The admin CLI acting on an organization. */
export function operatorActor(organizationId: string): Actor {
  return { type: 'operator', id: null, label: 'admin CLI', organizationId };
}

/**
 * The audit log: every console change, every API call that changes data, and what schedules
 * and channels do on their own (who, what, when). Rows are only ever added: the database
 * refuses updates and deletes (migration 20261124000200).
 */
export function createAuditLog({ db, clock }: { db: Db; clock: Clock }) {
  return {
    /** Records one event; `trx` puts it in the caller's transaction. */
    async record(actor: Actor, action: string, subject: { type: string; id: string }, detail?: string, trx: Db = db): Promise<void> {
      await insertAuditEvent(trx, {
        organization_id: actor.organizationId,
        actor_type: actor.type,
        actor_id: actor.id,
        actor_label: actor.label,
        action,
        subject_type: subject.type,
        subject_id: subject.id,
        detail: detail ?? null,
        created_at: isoNow(clock),
      });
    },

    /** The organization's events matching `filter`, newest first; `before` is the id of the last one shown. */
    list(organizationId: string, filter: AuditFilter = {}, { before, limit = 50 }: { before?: number; limit?: number } = {}): Promise<AuditEventRow[]> {
      return listAuditEvents(db, organizationId, filter, { before, limit });
    },

    /** A page of the events matching `filter` (newest first) for the console's pager, with their capped total. */
    page: (organizationId: string, filter: AuditFilter, at: PageAt, limit: number) => pageAuditEvents(db, organizationId, filter, at, limit),

    /** Every matching event, newest first, a batch at a time (the CSV export: never the whole log in memory). */
    async *each(organizationId: string, filter: AuditFilter, batch = 1000): AsyncGenerator<AuditEventRow> {
      let before: number | undefined;
      for (;;) {
        const rows = await listAuditEvents(db, organizationId, filter, { before, limit: batch });
        yield* rows;
        if (rows.length < batch) return;
        before = rows.at(-1)!.id;
      }
    },

    actions: (organizationId: string) => listAuditActions(db, organizationId),

    /** What these events' subjects are called now, by `type:id`; a subject no longer found is missing. */
    subjectNames: (organizationId: string, events: ReadonlyArray<Pick<AuditEventRow, 'subject_type' | 'subject_id'>>): Promise<Map<string, SubjectName>> =>
      findSubjectNames(
        db,
        organizationId,
        events.map((e) => ({ type: e.subject_type, id: e.subject_id })),
      ),
  };
}
