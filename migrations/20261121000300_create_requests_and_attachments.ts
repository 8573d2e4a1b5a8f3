import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('requests', (t) => {
    t.string('id', 30).primary(); // req_ + ULID
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.uuid('scribe_id').notNullable().references('scribes.id').onDelete('CASCADE');
    t.enu('status', ['accepted', 'dispatched', 'fulfilled', 'failed']).notNullable();
    t.string('entity_type', 16).notNullable();
    t.uuid('entity_id');
    t.text('error_message');
    // The task input, kept until the dispatcher turns it into a task.
    t.text('title').notNullable();
    t.text('summary').notNullable();
    t.text('acceptance_criteria');
    // Dispatcher bookkeeping: when the receipt may next be claimed (lease or backoff),
    // by which claim, and how many claims it has had.
    t.string('available_at', 24).notNullable();
    t.uuid('claim_token');
    t.integer('attempts').notNullable().defaultTo(0);
    t.string('dispatched_at', 24);
    t.string('completed_at', 24);
    t.string('created_at', 24).notNullable();
    t.string('updated_at', 24).notNullable();
    // List of a scribe's receipts, newest first, with and without a status filter.
    t.index(['scribe_id', 'created_at', 'id'], 'requests_scribe_created');
    t.index(['scribe_id', 'status', 'created_at', 'id'], 'requests_scribe_status_created');
  });
  // The dispatcher's queue: only unfinished receipts, so the index stays small.
  await knex.schema.alterTable('requests', (t) => {
    t.index(['available_at'], 'requests_dispatch_queue', {
      predicate: knex.whereRaw("status in ('accepted', 'dispatched')"),
    });
  });

  await knex.schema.createTable('attachments', (t) => {
    t.uuid('id').primary();
    t.string('request_id', 30).notNullable().references('requests.id').onDelete('CASCADE');
    t.integer('position').notNullable();
    t.text('url').notNullable();
    t.string('filename', 255).notNullable();
    t.string('content_type', 255).notNullable();
    t.bigInteger('size_bytes').notNullable();
    // The stored file's name under <DATA_DIR>/attachments: content-addressed.
    t.string('sha256', 64).notNullable();
    t.string('created_at', 24).notNullable();
    t.unique(['request_id', 'position']);
    t.index(['sha256']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('attachments');
  await knex.schema.dropTable('requests');
}
