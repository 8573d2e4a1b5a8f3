import type { Knex } from 'knex';

/**
 * Two indexes every run wrote and few reads needed. `tasks_work_queue` (open and in-progress
 * tasks by age) served only counts of that work, which `tasks_scribe_id_status_created_at_index`
 * answers as well, scribe by scribe; each task entered it, moved in it and left it. Stream
 * events were all indexed by kind and time for the pruning of deltas alone: now only the
 * deltas are, by time.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('drop index tasks_work_queue');
  await knex.raw('drop index stream_events_kind_created');
  await knex.raw("create index stream_events_deltas on stream_events (created_at) where kind = 'delta'");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index stream_events_deltas');
  await knex.raw('create index stream_events_kind_created on stream_events (kind, created_at)');
  await knex.raw("create index tasks_work_queue on tasks (created_at, id) where status in ('open', 'in_progress')");
}
