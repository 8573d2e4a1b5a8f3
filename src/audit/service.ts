import type { Db } from '../db/knex.js';
import { type Clock, isoNow } from '../lib/clock.js';

/** Who did something: a signed-in console user, an API key, or the operator at the admin CLI. */
export interface Actor {
  type: 'user' | 'api_key' | 'operator';
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

/** The audit log: every console change and every API call that changes data (who, what, when). */
export function createAuditLog({ db, clock }: { db: Db; clock: Clock }) {
  return {
    /** Records one event; `trx` puts it in the caller's transaction. */
    async record(actor: Actor, action: string, subject: { type: string; id: string }, detail?: string, trx: Db = db): Promise<void> {
      await trx('audit_events').insert({
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

    /** The organization's events, newest first; `before` is the id of the last one shown. */
    async list(organizationId: string, { before, limit = 50 }: { before?: number; limit?: number } = {}): Promise<AuditEventRow[]> {
      const query = db<AuditEventRow>('audit_events').where({ organization_id: organizationId });
      if (before !== undefined) query.where('id', '<', before);
      return query.orderBy('id', 'desc').limit(limit);
    },
  };
}
