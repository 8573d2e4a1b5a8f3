import type { Db } from '../db/knex.js';
import { insertRows } from '../db/rows.js';
import { groupBy } from '../lib/group-by.js';
import type { SecretBox } from '../secrets/secret-box.js';

export interface AgentCallRow {
  id: number;
  organization_id: string;
  scribe_id: string;
  task_id: string | null;
  session_id: string | null;
  run_id: string;
  position: number;
  kind: 'model' | 'tool';
  name: string;
  arguments: string | null;
  result: string | null;
  duration_ms: number;
  error: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  created_at: string;
}

export type NewAgentCall = Omit<AgentCallRow, 'id'>;

/** Several calls, of one run or of many, in as few statements as the database takes. */
export async function insertAgentCalls(db: Db, rows: readonly NewAgentCall[]): Promise<void> {
  await insertRows(db, 'agent_calls', rows);
}

/** A task's or a session's calls, in the order they were made. */
export async function listAgentCalls(db: Db, of: { taskId: string } | { sessionId: string }): Promise<AgentCallRow[]> {
  const where = 'taskId' in of ? { task_id: of.taskId } : { session_id: of.sessionId };
  const rows = await db<AgentCallRow>('agent_calls').where(where).orderBy('id');
  // A run's calls are written without waiting and may commit out of order (PostgreSQL): the runs
  // in the order they began, one after another, each run's calls by position.
  const began = new Map<string, number>();
  for (const row of rows) if (!began.has(row.run_id)) began.set(row.run_id, row.id);
  return rows.sort((a, b) => began.get(a.run_id)! - began.get(b.run_id)! || a.position - b.position);
}

/** Token totals of each task's or session's model calls, by its id (ids without calls are absent). */
export async function usageOf(
  db: Db,
  of: { taskIds: readonly string[] } | { sessionIds: readonly string[] },
): Promise<Map<string, { input_tokens: number; output_tokens: number }>> {
  const [column, ids] = 'taskIds' in of ? ['task_id', of.taskIds] : ['session_id', of.sessionIds];
  if (ids.length === 0) return new Map();
  const rows: Array<{ id: string; input: number | string | null; output: number | string | null }> = await db('agent_calls')
    .whereIn(column, ids)
    .groupBy(column)
    .select(`${column} as id`)
    .sum({ input: 'input_tokens', output: 'output_tokens' });
  return new Map(rows.map((row) => [row.id, { input_tokens: Number(row.input ?? 0), output_tokens: Number(row.output ?? 0) }]));
}

export interface AgentCallTotals {
  organization_id: string;
  scribe_slug: string;
  model_calls: number;
  tool_calls: number;
  input_tokens: number;
  output_tokens: number;
  errors: number;
}

/** Every scribe's calls so far, for /metrics. */
export async function agentCallTotals(db: Db): Promise<AgentCallTotals[]> {
  const rows = await db('agent_calls as c')
    .join('scribes as s', 's.id', 'c.scribe_id')
    .groupBy('s.slug', 's.organization_id')
    .select('s.slug as scribe_slug', 's.organization_id')
    .select(db.raw("sum(case when c.kind = 'model' then 1 else 0 end) as model_calls"))
    .select(db.raw("sum(case when c.kind = 'tool' then 1 else 0 end) as tool_calls"))
    .select(db.raw('coalesce(sum(c.input_tokens), 0) as input_tokens'))
    .select(db.raw('coalesce(sum(c.output_tokens), 0) as output_tokens'))
    .select(db.raw('sum(case when c.error is null then 0 else 1 end) as errors'));
  return rows.map((r: Record<string, unknown>) => ({
    organization_id: String(r.organization_id),
    scribe_slug: String(r.scribe_slug),
    model_calls: Number(r.model_calls),
    tool_calls: Number(r.tool_calls),
    input_tokens: Number(r.input_tokens),
    output_tokens: Number(r.output_tokens),
    errors: Number(r.errors),
  }));
}

export interface McpServerRow {
  id: string;
  organization_id: string;
  scribe_id: string;
  url: string;
  /** Sent with every request; secrets. */
  headers: Record<string, string>;
  created_at: string;
}

/** Stored with its headers as sealed JSON (secrets/secret-box.ts). */
type StoredMcpServer = Omit<McpServerRow, 'headers'> & { headers: string };
const fromStoredServer =
  (secrets: SecretBox) =>
  (row: StoredMcpServer): McpServerRow => ({ ...row, headers: JSON.parse(secrets.open(row.headers)) as Record<string, string> });

export async function insertMcpServer(db: Db, secrets: SecretBox, row: McpServerRow): Promise<void> {
  await db('mcp_servers').insert({ ...row, headers: secrets.seal(JSON.stringify(row.headers)) });
}

export async function deleteMcpServer(db: Db, id: string): Promise<void> {
  await db('mcp_servers').where({ id }).delete();
}

export async function findMcpServer(db: Db, secrets: SecretBox, organizationId: string, id: string): Promise<McpServerRow | undefined> {
  const row = await db<StoredMcpServer>('mcp_servers').where({ id, organization_id: organizationId }).first();
  return row && fromStoredServer(secrets)(row);
}

export async function findMcpServerById(db: Db, secrets: SecretBox, id: string): Promise<McpServerRow | undefined> {
  const row = await db<StoredMcpServer>('mcp_servers').where({ id }).first();
  return row && fromStoredServer(secrets)(row);
}

export async function listMcpServers(db: Db, secrets: SecretBox, scribeId: string): Promise<McpServerRow[]> {
  return (await listMcpServersOf(db, secrets, [scribeId])).get(scribeId) ?? [];
}

/** The MCP servers of each of the scribes, oldest first (the agent runtime reads those of a claim's scribes at once). */
export async function listMcpServersOf(db: Db, secrets: SecretBox, scribeIds: readonly string[]): Promise<Map<string, McpServerRow[]>> {
  const rows = await db<StoredMcpServer>('mcp_servers')
    .whereIn('scribe_id', scribeIds)
    .orderBy([{ column: 'created_at' }, { column: 'id' }]);
  return groupBy(rows.map(fromStoredServer(secrets)), (row) => row.scribe_id);
}
