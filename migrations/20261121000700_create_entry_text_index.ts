import type { Knex } from 'knex';

/**
 * A substring index over text field values for search: on SQLite an FTS5 table with the
 * trigram tokenizer, kept in step with entry_values by triggers; on PostgreSQL a pg_trgm GIN
 * index on the column itself (pg_trgm is a trusted extension: the database's owner may
 * create it). The only code that queries either is src/entries/search/text-index.ts.
 */
export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') {
    await knex.raw('create extension if not exists pg_trgm');
    await knex.raw('create index entry_values_text_trgm on entry_values using gin (text_folded gin_trgm_ops)');
    return;
  }
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
  if (knex.client.config.client === 'pg') {
    await knex.raw('drop index entry_values_text_trgm');
    return;
  }
  await knex.raw('drop trigger entry_values_fts_update');
  await knex.raw('drop trigger entry_values_fts_delete');
  await knex.raw('drop trigger entry_values_fts_insert');
  await knex.raw('drop table entry_values_fts');
}
