import type { Knex } from 'knex';

/**
 * An organization's receipts by the time of their 202: the console's dashboard counts and
 * charts them over the last hours and day, and its receipts list pages them newest first.
 * Before this only a scribe's receipts were indexed by time, so those reads went through every
 * receipt of the organization. The trailing columns are what the charts read (a scribe's
 * throughput, status, 202 → fulfilled), so both databases answer them from the index alone.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('create index requests_organization_created on requests (organization_id, created_at, scribe_id, status, completed_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists requests_organization_created');
}
