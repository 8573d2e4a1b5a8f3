import type { Knex } from 'knex';

/**
 * The audit log for review: a subject's whole history in one index seek, and rows the
 * database keeps as written. UPDATE and DELETE on audit_events fail on both databases, so
 * no code path (or hand-written statement) can rewrite what happened. Deleting an
 * organization's rows by cascade is refused too: the application deletes no organizations.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('audit_events', (t) => {
    t.index(['organization_id', 'subject_type', 'subject_id', 'id'], 'audit_events_subject');
  });
  if (knex.client.config.client === 'pg') {
    await knex.raw(`create function audit_events_append_only() returns trigger language plpgsql as $$
      begin raise exception 'audit events are append-only'; end $$`);
    await knex.raw('create trigger audit_events_append_only before update or delete on audit_events for each row execute function audit_events_append_only()');
  } else {
    for (const event of ['update', 'delete']) {
      await knex.raw(`create trigger audit_events_no_${event} before ${event} on audit_events begin select raise(abort, 'audit events are append-only'); end`);
    }
  }
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') {
    await knex.raw('drop trigger audit_events_append_only on audit_events');
    await knex.raw('drop function audit_events_append_only()');
  } else {
    for (const event of ['update', 'delete']) await knex.raw(`drop trigger audit_events_no_${event}`);
  }
  await knex.schema.alterTable('audit_events', (t) => t.dropIndex([], 'audit_events_subject'));
}
