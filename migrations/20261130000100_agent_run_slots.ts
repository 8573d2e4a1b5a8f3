import type { Knex } from 'knex';

/**
 * Agent runs shared among scribes, and capped per scribe across processes (runtime/queries.ts,
 * "Slots and turns"). Each scribe counts its runs in flight (`runs_in_flight`: its tasks and
 * sessions that hold a claim), may cap them (`max_concurrency`), and has a turn
 * (`run_turn_at`) while it has work waiting for a first claim. A claim reads the scribes
 * whose turn has come, then each one's oldest unclaimed work, from indexes that hold only
 * unclaimed due rows: neither the work in flight nor finished work is read past. Leases that
 * ran out (a dead process) are found in indexes of the claimed rows by lease end.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('scribes', (t) => {
    // Null: no cap.
    t.integer('max_concurrency');
    t.integer('runs_in_flight').notNullable().defaultTo(0);
    // Null: nothing of the scribe's waits for a slot (or it is at its cap).
    t.string('run_turn_at', 24);
  });
  // Scribes whose turn has come, longest waiting first; most have none, so the index holds only those with one.
  await knex.raw('create index scribes_run_turns on scribes (run_turn_at, id) where run_turn_at is not null');
  // A scribe's oldest work waiting for a claim: claimed and finished rows leave the index.
  await knex.raw("create index tasks_unclaimed_by_scribe on tasks (scribe_id, created_at, id) where status in ('open', 'in_progress') and claim_token is null");
  await knex.raw('create index sessions_unclaimed_by_scribe on sessions (scribe_id, created_at, id) where reply_due and claim_token is null');
  // Claimed work by lease end: a lease that ran out is the first row, whatever is in flight.
  await knex.raw('create index tasks_claimed on tasks (lease_until, id) where claim_token is not null');
  await knex.raw('create index sessions_claimed on sessions (lease_until, id) where claim_token is not null');
  // Replaced by the two above.
  await knex.raw('drop index tasks_work_queue_by_scribe');
  await knex.raw('drop index sessions_reply_queue_by_scribe');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("create index tasks_work_queue_by_scribe on tasks (scribe_id, created_at, id) where status in ('open', 'in_progress')");
  await knex.raw('create index sessions_reply_queue_by_scribe on sessions (scribe_id, created_at, id) where reply_due');
  for (const index of ['sessions_claimed', 'tasks_claimed', 'sessions_unclaimed_by_scribe', 'tasks_unclaimed_by_scribe', 'scribes_run_turns'])
    await knex.raw(`drop index ${index}`);
  // ALTER TABLE … DROP COLUMN, not Knex's dropColumn, which rebuilds the table on SQLite.
  for (const column of ['run_turn_at', 'runs_in_flight', 'max_concurrency']) await knex.raw(`alter table scribes drop column ${column}`);
}
