import type { Knex } from 'knex';

/**
 * Periodic jobs that must run once per database, not once per process (maintenance,
 * pruning): each run is recorded under its job and time slot, and only the process whose
 * insert wins runs it (src/jobs/once.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('job_runs', (t) => {
    t.string('job', 64).notNullable();
    t.string('slot', 24).notNullable();
    t.string('started_at', 24).notNullable();
    t.primary(['job', 'slot']);
    t.index(['started_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('job_runs');
}
