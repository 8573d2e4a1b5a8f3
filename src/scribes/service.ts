import type { Db } from '../db/knex.js';
import { type Clock, isoNow } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import { isUniqueViolation } from '../db/knex.js';
import { NotFoundError, ValidationError } from '../http/errors.js';
import * as queries from './queries.js';
import { SCRIBE_STATES, type ScribeRef, type ScribeRow, type ScribeState } from './queries.js';

export const messages = {
  scribeNotFound: 'Scribe not found',
  scribeNotActive: 'Scribe is not active',
  invalidSlug: 'Slug must match ^[a-z0-9][a-z0-9-]{0,62}$',
  slugTaken: 'Slug is already used by another scribe in this organization',
  invalidState: `State must be one of ${SCRIBE_STATES.join(', ')}`,
  nameRequired: 'Name is required',
};

export const SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

export type { ScribeRef, ScribeRow, ScribeState };
export type ScribeService = ReturnType<typeof createScribeService>;

export function isScribeState(value: unknown): value is ScribeState {
  return (SCRIBE_STATES as readonly unknown[]).includes(value);
}

export function createScribeService({ db, clock }: { db: Db; clock: Clock }) {
  return {
    /** The organization's scribe with this slug; 404 `Scribe not found` otherwise, also for other organizations' scribes. */
    async getBySlug(organizationId: string, slug: string): Promise<ScribeRef> {
      const scribe = SLUG_PATTERN.test(slug) ? await queries.findScribeBySlug(db, organizationId, slug) : undefined;
      if (!scribe) throw new NotFoundError(messages.scribeNotFound);
      return scribe;
    },

    async create(input: { organizationId: string; slug: string; name: string; state?: string }): Promise<ScribeRow> {
      const state = input.state ?? 'active';
      if (!SLUG_PATTERN.test(input.slug)) throw new ValidationError(messages.invalidSlug);
      if (!isScribeState(state)) throw new ValidationError(messages.invalidState);
      if (!input.name.trim()) throw new ValidationError(messages.nameRequired);
      const now = isoNow(clock);
      const row: ScribeRow = {
        id: newId(),
        organization_id: input.organizationId,
        slug: input.slug,
        name: input.name.trim(),
        state,
        created_at: now,
        updated_at: now,
      };
      try {
        await queries.insertScribe(db, row);
      } catch (err) {
        if (isUniqueViolation(err)) throw new ValidationError(messages.slugTaken);
        throw err;
      }
      return row;
    },

    async setState(organizationId: string, slug: string, state: string): Promise<ScribeRef> {
      if (!isScribeState(state)) throw new ValidationError(messages.invalidState);
      const scribe = await this.getBySlug(organizationId, slug);
      const now = isoNow(clock);
      await queries.updateScribeState(db, scribe.id, state, now);
      return { ...scribe, state };
    },
  };
}
