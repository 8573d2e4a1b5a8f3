import type { Knex } from 'knex';

/**
 * The page-order index also holds what reading in page order checks first (visibility and
 * the folded text), so a search that reads a type's entries in page order reads the index
 * alone until an entry passes those checks, instead of each entry's whole row, which was much
 * of such a scan's cost (docs/performance.md).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('entries', (t) => {
    t.index(['entry_type_id', 'created_at', 'id', 'draft', 'archived_at', 'search_text'], 'entries_type_page');
    t.dropIndex(['entry_type_id', 'created_at', 'id'], 'entries_type_created');
  });
  await knex.raw('analyze entries');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('entries', (t) => {
    t.index(['entry_type_id', 'created_at', 'id'], 'entries_type_created');
    t.dropIndex(['entry_type_id', 'created_at', 'id', 'draft', 'archived_at', 'search_text'], 'entries_type_page');
  });
  await knex.raw('analyze entries');
}
