import type { Knex } from 'knex';

/**
 * The turns of scribes with nothing in flight, in turn: the runtime's claim serves them
 * first, so that a scribe's first run never waits behind the turns of scribes whose backlog
 * already holds slots.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('create index scribes_idle_turns on scribes (run_turn_at, id) where run_turn_at is not null and runs_in_flight = 0');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index scribes_idle_turns');
}
