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
 * form A tells a missing key from a bad one, form B says `Unauthorized` for both.
 */
export function requireApiKey(authenticate: (key: string) => Promise<ApiCaller | null>): RequestHandler {
  return async (req, _res, next) => {
    const key = req.get('x-api-key')?.trim();
    const caller = key ? await authenticate(key) : null;
    if (caller) {
      req.caller = caller;
      return next();
    }
    if (errorFormFor(req.originalUrl) === 'B') throw new UnauthorizedError(messages.unauthorized);
    throw new UnauthorizedError(key ? messages.keyInvalid : messages.keyRequired);
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
