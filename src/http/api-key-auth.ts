import type { RequestHandler } from 'express';
import type { ApiCaller } from '../organizations/api-keys.js';
import type { Actor } from '../audit/service.js';
import { UnauthorizedError } from './errors.js';
import { errorFormFor } from './envelopes.js';

export const messages = {
  keyRequired: 'API key is required',
  keyInvalid: 'Invalid API key',
  unauthorized: 'Unauthorized',
};

/**
 * Requires a valid `X-Api-Key` and attaches the caller. The 401 text follows the family:
 * form A tells a missing key from a bad one, form B says `Unauthorized` for both. A refused
 * call passes through `countRefusal` (the per-address limit), which answers 429 itself once
 * the address has been refused too often; calls with a valid key never touch that count.
 */
export function requireApiKey(authenticate: (key: string) => Promise<ApiCaller | null>, countRefusal?: RequestHandler): RequestHandler {
  return async (req, res, next) => {
    const key = req.get('x-api-key')?.trim();
    const caller = key ? await authenticate(key) : null;
    if (caller) {
      req.caller = caller;
      return next();
    }
    const refused = new UnauthorizedError(errorFormFor(req.originalUrl) === 'B' ? messages.unauthorized : key ? messages.keyInvalid : messages.keyRequired);
    if (!countRefusal) throw refused;
    await countRefusal(req, res, (err?: unknown) => next(err ?? refused));
  };
}

/** The caller set by `requireApiKey`; a route without it is a programming error. */
export function callerOf(req: { caller?: ApiCaller }): ApiCaller {
  if (!req.caller) throw new Error('route is missing requireApiKey');
  return req.caller;
}

/** The API key behind the request, as the audit log names it. */
export function actorOf(req: { caller?: ApiCaller }): Actor {
  const caller = callerOf(req);
  return { type: 'api_key', id: caller.keyId, label: caller.label, organizationId: caller.organizationId };
}
