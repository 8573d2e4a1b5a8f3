import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('entry_types', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('name', 200).notNullable();
    t.string('created_at', 24).notNullable();
    t.string('updated_at', 24).notNullable();
    t.unique(['organization_id', 'name']);
  });

  await knex.schema.createTable('entry_type_fields', (t) => {
    t.uuid('id').primary();
    t.uuid('entry_type_id').notNullable().references('entry_types.id').onDelete('CASCADE');
    t.integer('position').notNullable();
    t.string('name', 100).notNullable();
    // Search matches field names case-insensitively, so they must be unique that way.
    t.string('name_key', 100).notNullable();
    t.enu('type', ['text', 'number', 'boolean', 'date', 'relationship']).notNullable();
    t.uuid('target_entry_type_id').references('entry_types.id');
    t.boolean('is_primary').notNullable().defaultTo(false);
    t.unique(['entry_type_id', 'name_key']);
    t.unique(['entry_type_id', 'position']);
  });

  await knex.schema.createTable('entries', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.uuid('entry_type_id').notNullable().references('entry_types.id').onDelete('CASCADE');
    // The field values as the API serves them: {"<field name>": value}.
    t.text('fields').notNullable();
    t.boolean('draft').notNullable().defaultTo(false);
    t.string('archived_at', 24);
    // Lower-cased text of all text fields, for general text search.
    t.text('search_text').notNullable().defaultTo('');
    // Lower-cased primary field value, for relationship:<primary value> search.
    t.text('primary_text');
    t.string('created_at', 24).notNullable();
    t.string('updated_at', 24).notNullable();
    // Keyset paging of one type's entries, oldest first.
    t.index(['entry_type_id', 'created_at', 'id'], 'entries_type_created');
    t.index(['organization_id', 'primary_text'], 'entries_org_primary');
  });

  // One row per field value, typed, so each field search can use an index.
  await knex.schema.createTable('entry_values', (t) => {
    // A stable integer key: the text index refers to value rows by it.
    t.increments('id');
    t.uuid('entry_id').notNullable().references('entries.id').onDelete('CASCADE');
    t.uuid('field_id').notNullable().references('entry_type_fields.id').onDelete('CASCADE');
    t.text('text_folded');
    t.double('number_value');
    t.boolean('bool_value');
    t.string('date_value', 10);
    t.unique(['entry_id', 'field_id']);
    t.index(['field_id', 'number_value'], 'entry_values_number');
    t.index(['field_id', 'date_value'], 'entry_values_date');
    t.index(['field_id', 'bool_value'], 'entry_values_bool');
    t.index(['field_id', 'text_folded'], 'entry_values_text');
  });

  await knex.schema.createTable('entry_links', (t) => {
    t.uuid('entry_id').notNullable().references('entries.id').onDelete('CASCADE');
    t.uuid('field_id').notNullable().references('entry_type_fields.id').onDelete('CASCADE');
    t.uuid('target_entry_id').notNullable().references('entries.id').onDelete('CASCADE');
    t.primary(['entry_id', 'field_id', 'target_entry_id']);
    t.index(['target_entry_id'], 'entry_links_target');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('entry_links');
  await knex.schema.dropTable('entry_values');
  await knex.schema.dropTable('entries');
  await knex.schema.dropTable('entry_type_fields');
  await knex.schema.dropTable('entry_types');
}
