import type { Knex } from 'knex';
import type { Db } from '../db/knex.js';
import { atGroupEnd } from '../db/group-commit.js';
import { dialectOf } from '../db/dialect.js';
import { caseById } from '../db/rows.js';

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
  /** Runs (tasks and session answers) in flight at once, across all processes; null: no cap. */
  max_concurrency: number | null;
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

/** Sets the scribe's state; one powered on has its turn for a run at once (its work may wait). */
export async function updateScribeState(db: Db, id: string, state: ScribeState, at: string): Promise<void> {
  await db('scribes').where({ id }).update({ state, updated_at: at });
  if (state === 'active') await bringRunTurnsForward(db, [id], at);
}

/** Changes agent settings; a change of the cap brings the scribe's turn for a run (there may be room now). */
export async function updateScribeAgent(db: Db, id: string, change: AgentSettings, at: string): Promise<void> {
  await db('scribes')
    .where({ id })
    .update({ ...change, updated_at: at });
  if (change.max_concurrency !== undefined) await bringRunTurnsForward(db, [id], at);
}

export type AgentSettings = Partial<
  Pick<ScribeRow, 'agent' | 'instructions' | 'model' | 'model_base_url' | 'model_api_key' | 'model_vision' | 'max_tool_rounds' | 'token_budget' | 'max_concurrency'>
>;

/*
 * Run slots. `scribes.runs_in_flight` is the number of the scribe's tasks and sessions that
 * hold a claim (claim_token not null): every statement that sets or clears a claim changes
 * it in its own transaction (a takeover of a lapsed lease, token to token, leaves it). The
 * runtime's claim (runtime/queries.ts) reads it with the scribe's row locked and claims no
 * more than `max_concurrency` allows. `run_turn_at` is when the scribe's turn for a slot
 * comes: whatever makes its work due, or frees a slot under its cap, brings it forward here.
 * Both are written before the change's webhook events in its transaction, so that
 * transactions that lock a scribe's row and a webhook endpoint's lock them in one order.
 */

/** Work of these scribes became due at `at` (created, reopened, queued, handed back, powered on): their turn comes by then. */
export async function bringRunTurnsForward(db: Db, scribeIds: readonly string[], at: string): Promise<void> {
  if (scribeIds.length === 0) return;
  const ids = await holdInOrder(db, scribeIds);
  // On PostgreSQL a claim that held a row was waited for (by `holdInOrder`, or for one row by the UPDATE itself): the UPDATE reads the turn it left.
  await db('scribes')
    .whereIn('id', ids)
    .update({ run_turn_at: db.raw('case when run_turn_at is null or run_turn_at > ? then ? else run_turn_at end', [at, at]) });
}

/**
 * A run of the scribe let go of its claim at `at` (finished, failed, cancelled or handed back):
 * one run fewer in flight. A capped scribe's turn comes (a slot under its cap is free), as
 * does the turn of one whose work was handed back (`handedBack`: it is due again).
 */
export async function runEnded(db: Db, scribeId: string, at: string, { handedBack = false }: { handedBack?: boolean } = {}): Promise<void> {
  if (!handedBack) return runsEnded(db, [{ scribeId, at }]);
  await db('scribes')
    .where({ id: scribeId })
    .update({ runs_in_flight: db.raw('runs_in_flight - 1'), run_turn_at: db.raw('case when run_turn_at is null or run_turn_at > ? then ? else run_turn_at end', [at, at]) });
}

/**
 * Locks the rows of several scribes in order of id, waiting for each (PostgreSQL; SQLite has
 * its one writer), before an UPDATE of them all: the UPDATE alone takes them in the order it
 * reads the table, which is not the order of its list of ids. A claim takes them in order of id
 * (runtime/queries.ts), so a batch that took them in another order could hold one the claim
 * waits for while it waits for one the claim holds: a deadlock, which PostgreSQL ends after a
 * second by failing one of them. The ids, sorted and without repeats.
 */
export async function holdInOrder(db: Db, scribeIds: readonly string[]): Promise<string[]> {
  const ids = [...new Set(scribeIds)].sort();
  if (ids.length > 1) await dialectOf(db).holdRows(db, 'scribes', ids);
  return ids;
}

/** A run that ended at `at`; `due`: its work is due again (a newer message came meanwhile), so its scribe's turn comes whatever its cap. */
export interface EndedRun {
  scribeId: string;
  at: string;
  due?: boolean;
}

/**
 * Runs that ended (`runEnded` of each), in one statement however many: each scribe's count
 * down by its runs, and the turn of a capped scribe, or of one whose work is due again,
 * brought to the earliest of their ends. A group of writes (db/group-commit.ts) makes it once
 * at its end, for all its runs. In the runs' batches of writes (runtime/run-writes.ts) it is
 * the only write to scribes' rows, and it locks them in order of id first (`holdInOrder`), as
 * claims do, so that neither two batches nor a batch and a claim wait on each other for them.
 */
export async function runsEnded(db: Db, ended: readonly EndedRun[]): Promise<void> {
  if (ended.length > 0) await atGroupEnd(db, ended, countRunsEnded);
}

async function countRunsEnded(db: Db, ended: readonly EndedRun[]): Promise<void> {
  const byScribe = new Map<string, { runs: number; at: string; due: boolean }>();
  for (const { scribeId, at, due = false } of ended) {
    const scribe = byScribe.get(scribeId);
    if (!scribe) byScribe.set(scribeId, { runs: 1, at, due });
    else {
      scribe.runs++;
      if (at < scribe.at) scribe.at = at;
      scribe.due ||= due;
    }
  }
  const ids = await holdInOrder(db, [...byScribe.keys()]);
  const at = caseById(db, ids, 'varchar(24)', (id) => byScribe.get(id)!.at);
  // Most batches have no work due again: their statement keeps its shorter text.
  const turnComes = [...byScribe.values()].some((scribe) => scribe.due)
    ? db.raw('(max_concurrency is not null or ? = 1)', [caseById(db, ids, 'integer', (id) => Number(byScribe.get(id)!.due))])
    : db.raw('max_concurrency is not null');
  await db('scribes')
    .whereIn('id', ids)
    .update({
      runs_in_flight: db.raw('runs_in_flight - ?', [caseById(db, ids, 'integer', (id) => byScribe.get(id)!.runs)]),
      run_turn_at: db.raw('case when ? and (run_turn_at is null or run_turn_at > ?) then ? else run_turn_at end', [turnComes, at, at]),
    });
}

/** Claimed rows of `table` whose lease ran out at `now`: their process died, or its event loop stopped. */
export const lapsed = (table: string) => (q: Knex.QueryBuilder, now: string) => q.whereNotNull(`${table}.claim_token`).where(`${table}.lease_until`, '<=', now);
