import type { Knex } from 'knex';

/**
 * Search rows become postings: each typed value and link also carries its entry's page key
 * (created_at, then id) and visibility (draft, archived), and the value and link indexes end
 * in them. A search then finds its matches, drops hidden ones, sorts them and takes a page
 * from the index alone, and reads only that page's entries (docs/performance.md, "Entries
 * and search"). The write path already rewrites an entry's values and links on every
 * change, so the copies cannot drift.
 *
 * Also: each entry type counts its entries (the planner weighs a search's matches against
 * it), and the trigram index drops positions (detail=none): a substring search asks for its
 * rarest trigrams and re-checks the text, so positions were cost without use
 * (text-match.ts).
 */
const VALUE_INDEXES = [
  ['entry_values_number', 'number_value'],
  ['entry_values_date', 'date_value'],
  ['entry_values_bool', 'bool_value'],
] as const;
const PAGE_KEY = ['entry_draft', 'entry_archived', 'entry_created_at', 'entry_id'];

const COPY_ENTRY_KEY = (table: string) => `update ${table} set (entry_created_at, entry_draft, entry_archived) =
  (select e.created_at, e.draft, e.archived_at is not null from entries e where e.id = ${table}.entry_id)`;

export async function up(knex: Knex): Promise<void> {
  for (const table of ['entry_values', 'entry_links']) {
    await knex.schema.alterTable(table, (t) => {
      t.string('entry_created_at', 24).notNullable().defaultTo('');
      t.boolean('entry_draft').notNullable().defaultTo(false);
      t.boolean('entry_archived').notNullable().defaultTo(false);
    });
    await knex.raw(COPY_ENTRY_KEY(table));
  }
  for (const [name, column] of VALUE_INDEXES) {
    await knex.schema.alterTable('entry_values', (t) => {
      t.dropIndex(['field_id', column, 'entry_id'], name);
      t.index(['field_id', column, ...PAGE_KEY], name);
    });
  }
  await knex.schema.alterTable('entry_links', (t) => {
    t.dropIndex(['target_entry_id'], 'entry_links_target');
    t.index(['target_entry_id', 'field_id', ...PAGE_KEY], 'entry_links_target');
  });
  // Text values are searched through the trigram index, never by this one.
  await knex.schema.alterTable('entry_values', (t) => t.dropIndex(['field_id', 'text_folded'], 'entry_values_text'));

  await knex.schema.alterTable('entry_types', (t) => t.integer('entry_count').notNullable().defaultTo(0));
  await knex.raw(`update entry_types set entry_count = (select count(*) from entries e where e.entry_type_id = entry_types.id)`);

  await rebuildTextIndex(knex, 'none');
  // New indexes start without statistics, and the planner picks badly without them.
  await knex.raw('analyze');
}

export async function down(knex: Knex): Promise<void> {
  // Columns are dropped with ALTER TABLE … DROP COLUMN (SQLite 3.35+, PostgreSQL), never with
  // Knex's dropColumn: on SQLite that rebuilds the table, and dropping the old entry_types
  // inside the migration's transaction (where foreign keys cannot be switched off) cascades
  // to every entry.
  await knex.raw('alter table entry_types drop column entry_count');
  await knex.schema.alterTable('entry_values', (t) => t.index(['field_id', 'text_folded'], 'entry_values_text'));
  await knex.schema.alterTable('entry_links', (t) => {
    t.dropIndex(['target_entry_id', 'field_id', ...PAGE_KEY], 'entry_links_target');
    t.index(['target_entry_id'], 'entry_links_target');
  });
  for (const [name, column] of VALUE_INDEXES) {
    await knex.schema.alterTable('entry_values', (t) => {
      t.dropIndex(['field_id', column, ...PAGE_KEY], name);
      t.index(['field_id', column, 'entry_id'], name);
    });
  }
  for (const table of ['entry_values', 'entry_links']) {
    for (const column of ['entry_created_at', 'entry_draft', 'entry_archived']) await knex.raw(`alter table ${table} drop column ${column}`);
  }
  await rebuildTextIndex(knex, 'full');
  await knex.raw('analyze');
}

/** SQLite FTS5 (see migration 20261121000700): the same table and triggers, with the given detail. PostgreSQL's pg_trgm index has no such option. */
async function rebuildTextIndex(knex: Knex, detail: 'none' | 'full'): Promise<void> {
  if (knex.client.config.client === 'pg') return;
  for (const trigger of ['entry_values_fts_update', 'entry_values_fts_delete', 'entry_values_fts_insert']) await knex.raw(`drop trigger if exists ${trigger}`);
  await knex.raw('drop table if exists entry_values_fts');
  await knex.raw(`create virtual table entry_values_fts using fts5(
    text_folded, content = 'entry_values', content_rowid = 'id', tokenize = 'trigram', detail = ${detail}
  )`);
  await knex.raw(`create trigger entry_values_fts_insert after insert on entry_values when new.text_folded is not null begin
    insert into entry_values_fts (rowid, text_folded) values (new.id, new.text_folded);
  end`);
  await knex.raw(`create trigger entry_values_fts_delete after delete on entry_values when old.text_folded is not null begin
    insert into entry_values_fts (entry_values_fts, rowid, text_folded) values ('delete', old.id, old.text_folded);
  end`);
  await knex.raw(`create trigger entry_values_fts_update after update of text_folded on entry_values begin
    insert into entry_values_fts (entry_values_fts, rowid, text_folded) select 'delete', old.id, old.text_folded where old.text_folded is not null;
    insert into entry_values_fts (rowid, text_folded) select new.id, new.text_folded where new.text_folded is not null;
  end`);
  await knex.raw(`insert into entry_values_fts (entry_values_fts) values ('rebuild')`);
}
