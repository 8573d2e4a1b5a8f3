import type { Db } from '../db/knex.js';
import { type Clock, isoNow } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import { dialectOf } from '../db/dialect.js';
import { NotFoundError, ValidationError } from '../http/errors.js';
import { checkedName, messages as nameMessages } from '../http/names.js';
import * as queries from './queries.js';
import { sharedLookup } from '../lib/batch-per-key.js';
import type { AddressPolicy } from '../net/address-policy.js';
import { checkUserUrl } from '../net/user-url.js';
import type { SecretBox } from '../secrets/secret-box.js';
import { AGENT_KINDS, SCRIBE_STATES, type AgentKind, type AgentSettings, type ScribeRef, type ScribeRow, type ScribeState } from './queries.js';

const MAX_INSTRUCTIONS = 20_000;

export const messages = {
  modelTooLong: 'Model must be at most 200 characters',
  apiKeyTooLong: 'API key must be at most 500 characters',
  invalidBaseUrl: 'Base URL must be an http:// or https:// URL without credentials, at most 2000 characters',
  privateBaseUrl: 'Base URL must not point at a private or local address (MODELS_ALLOW_PRIVATE=true allows it)',
  invalidToolRounds: 'Tool rounds must be a whole number from 1 to 50',
  invalidTokenBudget: 'Token budget must be a whole number from 100 to 10000000',
  invalidMaxConcurrency: 'Max concurrency must be a whole number from 1 to 10000',
  scribeNotFound: 'Scribe not found',
  scribeNotActive: 'Scribe is not active',
  invalidSlug: 'Slug must be 1 to 63 lowercase letters, digits and hyphens, starting with a letter or digit',
  slugTaken: 'Slug is already used by another scribe in this organization',
  invalidState: `State must be one of ${SCRIBE_STATES.join(', ')}`,
  ...nameMessages,
  invalidAgent: `Agent must be one of ${AGENT_KINDS.join(', ')}`,
  instructionsTooLong: `Instructions must be at most ${MAX_INSTRUCTIONS} characters`,
};

export const SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

export type { AgentKind, ScribeRef, ScribeRow, ScribeState };
export type ScribeService = ReturnType<typeof createScribeService>;

export function isScribeState(value: unknown): value is ScribeState {
  return (SCRIBE_STATES as readonly unknown[]).includes(value);
}

export function isAgentKind(value: unknown): value is AgentKind {
  return (AGENT_KINDS as readonly unknown[]).includes(value);
}

/** What staff may change of a scribe's agent; strings as typed (empty: back to the default). */
export interface AgentSettingsInput {
  agent?: string;
  instructions?: string;
  model?: string | null;
  baseUrl?: string | null;
  apiKey?: string | null;
  vision?: boolean;
  maxToolRounds?: number | null;
  tokenBudget?: number | null;
  /** Runs in flight at once across all processes; null: no cap. */
  maxConcurrency?: number | null;
}

function checkText(value: string | null, max: number, message: string): string | null {
  const text = value?.trim() || null;
  if (text && text.length > max) throw new ValidationError(message);
  return text;
}

function checkWhole(value: number | null, min: number, max: number, message: string): number | null {
  if (value === null) return null;
  if (!Number.isInteger(value) || value < min || value > max) throw new ValidationError(message);
  return value;
}

function checkInstructions(instructions: string): string {
  if (instructions.length > MAX_INSTRUCTIONS) throw new ValidationError(messages.instructionsTooLong);
  return instructions;
}

/**
 * `onActivated` runs when a scribe becomes active: its queued work can start. A scribe's own
 * model base URL obeys `modelPolicy` (MODELS_ALLOW_PRIVATE), here for IP addresses and again
 * at connect time for names (agents/openai.ts); its own key is stored sealed by `secrets`.
 */
export function createScribeService({
  db,
  clock,
  modelPolicy,
  secrets,
  onActivated = () => {},
}: {
  db: Db;
  clock: Clock;
  modelPolicy: AddressPolicy;
  secrets: SecretBox;
  onActivated?: (scribeId: string) => void;
}) {
  const checkBaseUrl = (value: string | null) =>
    value?.trim() ? checkUserUrl(value, modelPolicy, { invalid: messages.invalidBaseUrl, privateAddress: messages.privateBaseUrl }) : null;
  // Every call to a scribe's API asks this: concurrent calls share the lookup.
  const findBySlug = sharedLookup(
    (organizationId: string, slug: string) => `${organizationId}/${slug}`,
    (organizationId: string, slug: string) => queries.findScribeBySlug(db, organizationId, slug),
  );
  /** The settings to store for `change`, checked (the messages staff see) and the key sealed. */
  const agentSettings = (change: AgentSettingsInput): AgentSettings => {
    if (change.agent !== undefined && !isAgentKind(change.agent)) throw new ValidationError(messages.invalidAgent);
    if (change.instructions !== undefined) checkInstructions(change.instructions);
    const settings: AgentSettings = { agent: change.agent as AgentKind | undefined, instructions: change.instructions };
    if (change.model !== undefined) settings.model = checkText(change.model, 200, messages.modelTooLong);
    if (change.baseUrl !== undefined) settings.model_base_url = checkBaseUrl(change.baseUrl);
    if (change.apiKey !== undefined) {
      const key = checkText(change.apiKey, 500, messages.apiKeyTooLong);
      settings.model_api_key = key === null ? null : secrets.seal(key);
    }
    if (change.vision !== undefined) settings.model_vision = change.vision;
    if (change.maxToolRounds !== undefined) settings.max_tool_rounds = checkWhole(change.maxToolRounds, 1, 50, messages.invalidToolRounds);
    if (change.tokenBudget !== undefined) settings.token_budget = checkWhole(change.tokenBudget, 100, 10_000_000, messages.invalidTokenBudget);
    if (change.maxConcurrency !== undefined) settings.max_concurrency = checkWhole(change.maxConcurrency, 1, 10_000, messages.invalidMaxConcurrency);
    return settings;
  };
  return {
    /** The organization's scribe with this slug; 404 `Scribe not found` otherwise, also for other organizations' scribes. */
    async getBySlug(organizationId: string, slug: string): Promise<ScribeRef> {
      const scribe = SLUG_PATTERN.test(slug) ? await findBySlug(organizationId, slug) : undefined;
      if (!scribe) throw new NotFoundError(messages.scribeNotFound);
      return scribe;
    },

    /** A new scribe, `active` and worked by the builtin agent unless said otherwise, with any of the agent settings `setAgent` takes. */
    async create(input: { organizationId: string; slug: string; name: string; state?: string } & AgentSettingsInput): Promise<ScribeRow> {
      const state = input.state ?? 'active';
      if (!SLUG_PATTERN.test(input.slug)) throw new ValidationError(messages.invalidSlug);
      if (!isScribeState(state)) throw new ValidationError(messages.invalidState);
      const settings = agentSettings({ ...input, agent: input.agent ?? 'builtin' });
      const name = checkedName(input.name);
      const now = isoNow(clock);
      const row: ScribeRow = {
        id: newId(),
        organization_id: input.organizationId,
        slug: input.slug,
        name,
        state,
        agent: settings.agent!,
        instructions: settings.instructions ?? '',
        model: settings.model ?? null,
        model_base_url: settings.model_base_url ?? null,
        model_api_key: settings.model_api_key ?? null,
        model_vision: settings.model_vision ?? false,
        max_tool_rounds: settings.max_tool_rounds ?? null,
        token_budget: settings.token_budget ?? null,
        max_concurrency: settings.max_concurrency ?? null,
        created_at: now,
        updated_at: now,
      };
      try {
        await queries.insertScribe(db, row);
      } catch (err) {
        if (dialectOf(db).isUniqueViolation(err)) throw new ValidationError(messages.slugTaken);
        throw err;
      }
      return row;
    },

    /** Gives the scribe another name (its slug, the API's address, stays). */
    async rename(organizationId: string, slug: string, name: string): Promise<ScribeRow> {
      const checked = checkedName(name);
      const scribe = await this.getBySlug(organizationId, slug);
      await queries.renameScribe(db, scribe.id, checked, isoNow(clock));
      return (await queries.findScribeById(db, scribe.id))!;
    },

    async setState(organizationId: string, slug: string, state: string): Promise<ScribeRef> {
      if (!isScribeState(state)) throw new ValidationError(messages.invalidState);
      const scribe = await this.getBySlug(organizationId, slug);
      const now = isoNow(clock);
      await queries.updateScribeState(db, scribe.id, state, now);
      if (state === 'active') onActivated(scribe.id);
      return { ...scribe, state };
    },

    /** The organization's scribes by slug, names only. */
    async listNames(organizationId: string) {
      return queries.listScribeNames(db, organizationId);
    },

    /** The organization's scribes, whole rows, by slug. */
    list: (organizationId: string) => queries.listScribes(db, organizationId),

    /** The whole scribe row, for the runtime and the console. */
    async find(id: string): Promise<ScribeRow | undefined> {
      return queries.findScribeById(db, id);
    },

    /**
     * Changes which agent works the scribe, its instructions, and the openai agent's settings
     * for it. Each setting left undefined stays; an empty model, URL or key (or null) goes back
     * to the environment's.
     */
    async setAgent(organizationId: string, slug: string, change: AgentSettingsInput): Promise<ScribeRow> {
      const settings = agentSettings(change);
      const scribe = await this.getBySlug(organizationId, slug);
      await queries.updateScribeAgent(db, scribe.id, settings, isoNow(clock));
      // A cap raised or lifted may leave room for work that waited: the scribe's turn comes now.
      if (change.maxConcurrency !== undefined) onActivated(scribe.id);
      return (await queries.findScribeById(db, scribe.id))!;
    },
  };
}
