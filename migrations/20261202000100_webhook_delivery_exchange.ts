import type { Knex } from 'knex';

/**
 * What the console shows of a delivery's last attempt, as a request and its answer: the
 * headers sent (the signature included, never a secret) and the headers answered, each a JSON
 * object cut to a bounded size by the sender, and 4 KiB of the answer's body instead of 1,000
 * characters. SQLite does not hold a varchar to its length, so only PostgreSQL's widens.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.text('request_headers');
    t.text('response_headers');
  });
  if (knex.client.config.client === 'pg') await knex.raw('alter table webhook_deliveries alter column response_body type varchar(4096)');
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') await knex.raw('alter table webhook_deliveries alter column response_body type varchar(1000) using left(response_body, 1000)');
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.dropColumn('response_headers');
    t.dropColumn('request_headers');
  });
}
