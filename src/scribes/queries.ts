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

export async function findScribesByIds(db: Db, ids: readonly string[]): Promise<ScribeRow[]> {
  return db<ScribeRow>('scribes').whereIn('id', ids);
}

export async function findScribeById(db: Db, id: string): Promise<ScribeRow | undefined> {
  return db<ScribeRow>('scribes').where({ id }).first();
}

export async function updateScribeState(db: Db, id: string, state: ScribeState, at: string): Promise<void> {
  await db('scribes').where({ id }).update({ state, updated_at: at });
}

export async function updateScribeAgent(db: Db, id: string, change: { agent?: AgentKind; instructions?: string }, at: string): Promise<void> {
  await db('scribes').where({ id }).update({ ...change, updated_at: at });
}
