import type { Knex } from 'knex';

/**
 * A substring index over text field values for search (SQLite FTS5 with the trigram
 * tokenizer), kept in step with entry_values by triggers. SQLite-specific by nature; the
 * only code that queries it is src/entries/search/text-match.ts. A PostgreSQL install would
 * use a pg_trgm index on entry_values.text_folded instead.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create virtual table entry_values_fts using fts5(
    text_folded, content = 'entry_values', content_rowid = 'id', tokenize = 'trigram'
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
  // Index what is already there (nothing on a fresh database).
  await knex.raw(`insert into entry_values_fts (entry_values_fts) values ('rebuild')`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop trigger entry_values_fts_update');
  await knex.raw('drop trigger entry_values_fts_delete');
  await knex.raw('drop trigger entry_values_fts_insert');
  await knex.raw('drop table entry_values_fts');
}
