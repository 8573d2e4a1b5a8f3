import type { Knex } from 'knex';
import { dialectOf } from '../src/db/dialect.js';

const ACTORS_BEFORE = ['user', 'api_key', 'operator'];
/** Schedules and inbound channels act on their own behalf in the audit log. */
const ACTORS_AFTER = [...ACTORS_BEFORE, 'schedule', 'channel'];

/**
 * Schedules (src/schedules/): a scribe's cron expression in a time zone and the task it
 * submits, and the record of each fire. A receipt says where it came from (`origin_*`,
 * null for the API).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('schedules', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.uuid('scribe_id').notNullable().references('scribes.id').onDelete('CASCADE');
    t.string('cron', 200).notNullable();
    t.string('timezone', 64).notNullable();
    t.enu('overlap', ['skip', 'allow']).notNullable();
    // The task each fire submits, as POST .../requests takes it.
    t.text('summary').notNullable();
    t.text('title');
    t.text('acceptance_criteria');
    t.boolean('paused').notNullable().defaultTo(false);
    // The next fire time; null while paused.
    t.string('next_run_at', 24);
    // The claim of the process firing it (db/claims.ts); a lapsed lease is taken over.
    t.uuid('claim_token');
    t.string('lease_until', 24);
    t.string('last_fire_at', 24);
    t.string('created_at', 24).notNullable();
    t.string('updated_at', 24).notNullable();
    t.index(['scribe_id', 'created_at']);
    t.index(['organization_id', 'created_at']);
  });
  await knex.raw('create index schedules_due on schedules (next_run_at, id) where not paused');

  await knex.schema.createTable('schedule_fires', (t) => {
    t.uuid('id').primary();
    t.uuid('schedule_id').notNullable().references('schedules.id').onDelete('CASCADE');
    // The fire time it stands for; one row per (schedule, fire time), whichever process fires.
    t.string('fire_at', 24).notNullable();
    t.string('fired_at', 24).notNullable();
    t.enu('outcome', ['submitted', 'skipped']).notNullable();
    t.text('reason');
    t.string('request_id', 30).references('requests.id').onDelete('SET NULL');
    // Catch-up: the first fire time this one stands in for, when fires were missed (no process ran).
    t.string('missed_since', 24);
    // Run by staff ("run now") rather than by the clock.
    t.boolean('manual').notNullable().defaultTo(false);
    t.unique(['schedule_id', 'fire_at']);
    t.index(['request_id']);
  });

  await knex.schema.alterTable('requests', (t) => {
    t.string('origin_type', 16);
    t.uuid('origin_id');
  });

  await rebuildAuditEvents(knex, ACTORS_AFTER);
}

export async function down(knex: Knex): Promise<void> {
  await knex('audit_events').whereNotIn('actor_type', ACTORS_BEFORE).delete();
  await rebuildAuditEvents(knex, ACTORS_BEFORE);
  // ALTER TABLE … DROP COLUMN, not Knex's dropColumn: on SQLite that rebuilds the table, and
  // dropping the old requests table would cascade to the tasks and attachments that refer to it.
  for (const column of ['origin_type', 'origin_id']) await knex.raw(`alter table requests drop column ${column}`);
  await knex.schema.dropTable('schedule_fires');
  await knex.schema.dropTable('schedules');
}

const AUDIT_COLUMNS = ['id', 'organization_id', 'actor_type', 'actor_id', 'actor_label', 'action', 'subject_type', 'subject_id', 'detail', 'created_at'];

/**
 * The audit log again with other actor types, rows and ids kept. Neither database alters a
 * CHECK in place the same way (SQLite cannot at all), so the table is made anew and filled.
 */
async function rebuildAuditEvents(knex: Knex, actors: string[]): Promise<void> {
  await knex.schema.alterTable('audit_events', (t) => t.dropIndex(['organization_id', 'id']));
  await knex.schema.renameTable('audit_events', 'audit_events_old');
  await knex.schema.createTable('audit_events', (t) => {
    t.increments('id');
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.enu('actor_type', actors).notNullable();
    t.string('actor_id', 64);
    t.string('actor_label', 320).notNullable();
    t.string('action', 64).notNullable();
    t.string('subject_type', 32).notNullable();
    t.string('subject_id', 64).notNullable();
    t.text('detail');
    t.string('created_at', 24).notNullable();
    t.index(['organization_id', 'id']);
  });
  await knex.raw(`insert into audit_events (${AUDIT_COLUMNS.join(', ')}) select ${AUDIT_COLUMNS.join(', ')} from audit_events_old`);
  await dialectOf(knex).moveSequencePastRows(knex, 'audit_events');
  await knex.schema.dropTable('audit_events_old');
}
