import type { Knex } from 'knex';

/**
 * Each work queue again, by scribe: when the scribes with a backlog already have their share
 * of work under way in a process, the runtime finds the next piece of another scribe with one
 * seek per scribe (runtime/queries.ts) instead of reading past the whole backlog.
 */
const QUEUES = [
  { name: 'sessions_reply_queue_by_scribe', table: 'sessions', where: 'reply_due' },
  { name: 'tasks_work_queue_by_scribe', table: 'tasks', where: "status in ('open', 'in_progress')" },
];

export async function up(knex: Knex): Promise<void> {
  for (const queue of QUEUES) await knex.raw(`create index ${queue.name} on ${queue.table} (scribe_id, created_at, id) where ${queue.where}`);
}

export async function down(knex: Knex): Promise<void> {
  for (const queue of QUEUES) await knex.raw(`drop index if exists ${queue.name}`);
}
