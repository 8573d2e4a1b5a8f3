import type { Knex } from 'knex';

/** MCP servers whose tools a scribe's openai agent may call (src/agents/mcp.ts). */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('mcp_servers', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.uuid('scribe_id').notNullable().references('scribes.id').onDelete('CASCADE');
    // Streamable HTTP endpoint.
    t.string('url', 2000).notNullable();
    // A JSON object of headers sent with every request (e.g. Authorization): secrets, never shown again.
    t.text('headers').notNullable();
    t.string('created_at', 24).notNullable();
    t.index(['scribe_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('mcp_servers');
}
