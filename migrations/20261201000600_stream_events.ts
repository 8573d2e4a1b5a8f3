import type { Knex } from 'knex';

/**
 * What the API's event streams read: each change of a task or a session (its status, a
 * message complete, text added to a reply being written), numbered per task or session by
 * `seq` (the `id:` of its server-sent events). `id` orders every event of the database, for
 * the processes that look for new ones by polling (streams/feed.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('stream_events', (t) => {
    t.bigIncrements('id');
    t.uuid('subject_id').notNullable();
    t.integer('seq').notNullable();
    t.string('kind', 16).notNullable();
    t.text('data').notNullable();
    t.string('created_at', 24).notNullable();
    t.unique(['subject_id', 'seq'], { indexName: 'stream_events_subject_seq' });
    t.index(['kind', 'created_at'], 'stream_events_kind_created');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('stream_events');
}
