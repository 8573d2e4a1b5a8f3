import express, { type Request, type RequestHandler } from 'express';
import { BadRequestError, PayloadTooLargeError, type HttpError } from './errors.js';

export const messages = {
  invalidJson: 'Invalid JSON body',
  tooLarge: 'Request body too large',
};

export const BODY_LIMIT = '1mb';

/**
 * Parses JSON bodies but holds a parse failure back: the contract ranks 401 and 404 above
 * a malformed body, so the error is raised only when a handler asks for the body.
 * Bodies are read as JSON whatever their Content-Type, so a forgotten header still works.
 */
export function deferredJsonBody(): RequestHandler {
  const parse = express.json({ limit: BODY_LIMIT, strict: false, type: () => true });
  return (req, res, next) => {
    parse(req, res, (err?: unknown) => {
      if (err) req.bodyError = toHttpError(err);
      next();
    });
  };
}

/** The parsed body, or the held-back parse error. */
export function jsonBody(req: Request): unknown {
  if (req.bodyError) throw req.bodyError;
  return req.body;
}

function toHttpError(err: unknown): HttpError {
  const type = (err as { type?: string }).type;
  if (type === 'entity.too.large') return new PayloadTooLargeError(messages.tooLarge);
  return new BadRequestError(messages.invalidJson);
}
