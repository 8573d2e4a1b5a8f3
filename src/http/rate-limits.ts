import type { RequestHandler } from 'express';
import { ipKeyGenerator, rateLimit, type Options, type Store } from 'express-rate-limit';
import { callerOf } from './api-key-auth.js';
import { errorBody, errorFormFor } from './envelopes.js';

export const messages = { rateLimited: 'Rate limit exceeded' };

/**
 * The API's rate limits (express-rate-limit, a fixed one-minute window; `storeFor` gives
 * each limit its counters, in the database so every process counts): `perKey`, `perMinute`
 * calls per API key; and `refused`, as many calls without a valid key per client address,
 * run by requireApiKey on the refused calls only, so a counted call costs one write and a
 * valid key works from an address that others misuse; and `perChannel`, as many deliveries
 * per inbound channel (`res.locals.channelId`). 429 in the family's error form, with
 * `Retry-After` and the standard `RateLimit` / `RateLimit-Policy` headers. `perMinute` 0
 * turns both off.
 */
export function apiRateLimits(perMinute: number, storeFor: (name: string) => Store): { refused?: RequestHandler; perKey: RequestHandler; perChannel: RequestHandler } {
  if (perMinute === 0) return { perKey: (_req, _res, next) => next(), perChannel: (_req, _res, next) => next() };
  const common: Partial<Options> = {
    windowMs: 60_000,
    limit: perMinute,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    handler: (req, res) => {
      res.status(429).json(errorBody(errorFormFor(req.originalUrl), messages.rateLimited));
    },
  };
  return {
    // Slows down guessing keys from one address.
    refused: rateLimit({ ...common, identifier: 'unauthenticated', store: storeFor('unauthenticated'), keyGenerator: (req) => ipKeyGenerator(req.ip ?? '') }),
    perKey: rateLimit({ ...common, identifier: 'api-key', store: storeFor('api-key'), keyGenerator: (req) => callerOf(req).keyId }),
    perChannel: rateLimit({ ...common, identifier: 'channel', store: storeFor('channel'), keyGenerator: (_req, res) => String(res.locals.channelId) }),
  };
}
