import type { Knex } from 'knex';

/**
 * The typed value indexes also hold the entry id, so listing a field's matches reads the
 * index alone, without reading each match's row (docs/performance.md).
 */
const INDEXES = [
  ['entry_values_number', 'number_value'],
  ['entry_values_date', 'date_value'],
  ['entry_values_bool', 'bool_value'],
] as const;

export async function up(knex: Knex): Promise<void> {
  for (const [name, column] of INDEXES) {
    await knex.schema.alterTable('entry_values', (t) => {
      t.dropIndex(['field_id', column], name);
      t.index(['field_id', column, 'entry_id'], name);
    });
  }
  // New indexes start without statistics, and without them the planner may pick a plan
  // far slower than the right one: gather them now.
  await knex.raw('analyze entry_values');
}

export async function down(knex: Knex): Promise<void> {
  for (const [name, column] of INDEXES) {
    await knex.schema.alterTable('entry_values', (t) => {
      t.dropIndex(['field_id', column, 'entry_id'], name);
      t.index(['field_id', column], name);
    });
  }
  await knex.raw('analyze entry_values');
}
