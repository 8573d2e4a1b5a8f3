import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from '../logger.js';
import { HttpError, NotFoundError } from './errors.js';
import { errorBody, errorFormFor } from './envelopes.js';

export const messages = {
  notFound: 'Not found',
  internal: 'Internal server error',
};

/** Unknown paths under /api/v1: 404 `Not found`, no key needed. */
export function apiNotFound(): RequestHandler {
  return (_req, _res, next) => next(new NotFoundError(messages.notFound));
}

/**
 * OPTIONS, which no API path serves: 404 `Not found` as for any method a path does not
 * serve, where Express's routers would answer 200 with the path's methods in plain text.
 */
export function apiRefuseOptions(): RequestHandler {
  return (req, _res, next) => next(req.method === 'OPTIONS' ? new NotFoundError(messages.notFound) : undefined);
}

/**
 * The one error pipeline: known errors in their family's envelope; anything else is logged
 * with the request id and answered `Internal server error`, never echoed.
 */
export function apiErrors(logger: Logger): ErrorRequestHandler {
  return (err, req, res, next) => {
    if (res.headersSent) return next(err);
    const form = errorFormFor(req.originalUrl);
    if (err instanceof HttpError) {
      res.status(err.status).json(errorBody(form, err.message));
      return;
    }
    // The router could not percent-decode a path parameter: such a path names nothing.
    if (err instanceof URIError) {
      res.status(404).json(errorBody(form, messages.notFound));
      return;
    }
    logger.error({ err, requestId: req.id }, 'unhandled error in API request');
    res.status(500).json(errorBody(form, messages.internal));
  };
}
