import type { RequestHandler } from 'express';
import { ipKeyGenerator, rateLimit, type Options, type Store } from 'express-rate-limit';
import { callerOf } from './api-key-auth.js';
import { errorBody, errorFormFor } from './envelopes.js';

export const messages = { rateLimited: 'Rate limit exceeded' };

/**
 * The API's rate limits (express-rate-limit, a fixed one-minute window; `storeFor` gives
 * each limit its counters, in the database so every process counts): `perMinute` calls per API key, and as many unauthenticated calls (no key or a
 * bad one) per client address. 429 in the family's error form, with `Retry-After` and the
 * standard `RateLimit` / `RateLimit-Policy` headers. `perMinute` 0 turns both off.
 */
export function apiRateLimits(perMinute: number, storeFor: (name: string) => Store): { beforeAuth: RequestHandler; afterAuth: RequestHandler } {
  if (perMinute === 0) {
    const pass: RequestHandler = (_req, _res, next) => next();
    return { beforeAuth: pass, afterAuth: pass };
  }
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
    // Only refused calls count here, so guessing keys from one address is slowed down.
    beforeAuth: rateLimit({
      ...common,
      identifier: 'unauthenticated',
      store: storeFor('unauthenticated'),
      keyGenerator: (req) => ipKeyGenerator(req.ip ?? ''),
      skipSuccessfulRequests: true,
      requestWasSuccessful: (_req, res) => res.statusCode !== 401,
    }),
    afterAuth: rateLimit({ ...common, identifier: 'api-key', store: storeFor('api-key'), keyGenerator: (req) => callerOf(req).keyId }),
  };
}
