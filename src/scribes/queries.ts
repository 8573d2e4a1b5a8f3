import type { Db } from '../db/knex.js';

export const SCRIBE_STATES = ['active', 'powered_off', 'unprovisioned'] as const;
export type ScribeState = (typeof SCRIBE_STATES)[number];
/** Which agent works a scribe's tasks and sessions (src/agents). */
export const AGENT_KINDS = ['builtin', 'openai'] as const;
export type AgentKind = (typeof AGENT_KINDS)[number];

export interface ScribeRow {
  id: string;
  organization_id: string;
  slug: string;
  name: string;
  state: ScribeState;
  agent: AgentKind;
  /** The scribe's standing instructions: the agent's system prompt. */
  instructions: string;
  /** The openai agent's model, endpoint and key for this scribe; null: the environment's. */
  model: string | null;
  model_base_url: string | null;
  model_api_key: string | null;
  /** Whether the model takes images (attachments are then sent as image parts). */
  model_vision: boolean;
  /** Model rounds with tool calls a piece of work may take; null: the default (8). */
  max_tool_rounds: number | null;
  /** Input and output tokens a task or a session answer may use; null: no budget. */
  token_budget: number | null;
  created_at: string;
  updated_at: string;
}

export async function insertScribe(db: Db, row: ScribeRow): Promise<void> {
  await db('scribes').insert(row);
}

/** What the API needs of a scribe on every call; a lookup costs by the columns it reads. */
export type ScribeRef = Pick<ScribeRow, 'id' | 'organization_id' | 'slug' | 'state'>;

/** Served by the unique (organization_id, slug) index. */
export async function findScribeBySlug(db: Db, organizationId: string, slug: string): Promise<ScribeRef | undefined> {
  return db<ScribeRow>('scribes').where({ organization_id: organizationId, slug }).first('id', 'organization_id', 'slug', 'state');
}

/** The organization's scribes by slug: id, slug and name only (filters, pickers). */
export async function listScribeNames(db: Db, organizationId: string): Promise<Array<Pick<ScribeRow, 'id' | 'slug' | 'name'>>> {
  return db<ScribeRow>('scribes').where({ organization_id: organizationId }).orderBy('slug').select('id', 'slug', 'name');
}

/** SQLite hands booleans back as 0 and 1. */
const withBoolean = (row: ScribeRow): ScribeRow => ({ ...row, model_vision: Boolean(row.model_vision) });

/** The organization's scribes by slug, each with its state and agent (the operator's `scribe list`). */
export async function listScribes(db: Db, organizationId: string): Promise<ScribeRow[]> {
  return (await db<ScribeRow>('scribes').where({ organization_id: organizationId }).orderBy('slug')).map(withBoolean);
}

export async function findScribesByIds(db: Db, ids: readonly string[]): Promise<ScribeRow[]> {
  return (await db<ScribeRow>('scribes').whereIn('id', ids)).map(withBoolean);
}

export async function findScribeById(db: Db, id: string): Promise<ScribeRow | undefined> {
  const row = await db<ScribeRow>('scribes').where({ id }).first();
  return row && withBoolean(row);
}

export async function renameScribe(db: Db, id: string, name: string, at: string): Promise<void> {
  await db('scribes').where({ id }).update({ name, updated_at: at });
}

export async function updateScribeState(db: Db, id: string, state: ScribeState, at: string): Promise<void> {
  await db('scribes').where({ id }).update({ state, updated_at: at });
}

export type AgentSettings = Partial<Pick<ScribeRow, 'agent' | 'instructions' | 'model' | 'model_base_url' | 'model_api_key' | 'model_vision' | 'max_tool_rounds' | 'token_budget'>>;

export async function updateScribeAgent(db: Db, id: string, change: AgentSettings, at: string): Promise<void> {
  await db('scribes').where({ id }).update({ ...change, updated_at: at });
}
