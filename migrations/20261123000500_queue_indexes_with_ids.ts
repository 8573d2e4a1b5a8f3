import type { Knex } from 'knex';

/**
 * The work queues' partial indexes end in the id, the tie-break of their order
 * (db/claims.ts): rows made in one millisecond are claimed in the order they were made, on
 * SQLite and PostgreSQL alike, still read from the index alone.
 */
const QUEUES = [
  { name: 'requests_dispatch_queue', table: 'requests', columns: ['available_at'], where: "status in ('accepted', 'dispatched')" },
  { name: 'sessions_reply_queue', table: 'sessions', columns: ['created_at'], where: 'reply_due' },
  { name: 'tasks_work_queue', table: 'tasks', columns: ['created_at'], where: "status in ('open', 'in_progress')" },
];

async function remake(knex: Knex, withId: boolean): Promise<void> {
  for (const queue of QUEUES) {
    await knex.raw(`drop index if exists ${queue.name}`);
    const columns = withId ? [...queue.columns, 'id'] : queue.columns;
    await knex.raw(`create index ${queue.name} on ${queue.table} (${columns.join(', ')}) where ${queue.where}`);
  }
}

export async function up(knex: Knex): Promise<void> {
  await remake(knex, true);
}

export async function down(knex: Knex): Promise<void> {
  await remake(knex, false);
}
