import express, { type Request, type RequestHandler, type Response } from 'express';
import { ESCAPED_SURROGATE, wellFormedTexts } from '../lib/text.js';
import { BadRequestError, HttpError, PayloadTooLargeError } from './errors.js';

export const messages = {
  invalidJson: 'Invalid JSON body',
  tooLarge: 'Request body too large',
  encoded: 'Content-Encoding is not taken here: send the body as it was signed',
};

/** The largest body read (1 MiB, as docs/api.md documents), JSON or form. */
export const BODY_LIMIT = 1024 * 1024;

/** Requests whose JSON body escapes a surrogate (`\ud800`): only those can hold half of one. */
const escapesSurrogates = new WeakSet<Request>();

// Any Content-Type is read as JSON, so a client that forgets the header still works.
const parseJson = express.json({
  limit: BODY_LIMIT,
  strict: false,
  type: () => true,
  verify: (req, _res, body) => {
    // Most bodies escape nothing: the bytes are searched in place, and copied to text only when they hold a `\u`.
    if (body.includes('\\u') && ESCAPED_SURROGATE.test(body.toString('latin1'))) escapesSurrogates.add(req as Request);
  },
});

/**
 * 413 `Request body too large` at once, before anything else, when the request's
 * Content-Length already says so. Body parsers answer only once the body has arrived (to
 * keep the connection usable), which a client that declares a gigabyte and sends ten bytes
 * would hold open until the server's request timeout. The connection is closed after the
 * answer, so the rest is never read.
 */
export function refuseDeclaredTooLarge(): RequestHandler {
  return (req, res, next) => {
    if (Number(req.get('content-length')) > BODY_LIMIT) {
      res.set('Connection', 'close');
      return next(new PayloadTooLargeError(messages.tooLarge));
    }
    next();
  };
}

// Not inflated: a signature covers the bytes sent, so a compressed body is refused (415), not decoded.
const parseRaw = express.raw({ limit: BODY_LIMIT, type: () => true, inflate: false });

/** The request's body as bytes (an inbound webhook's, whose signature covers them exactly); 413 above 1 MiB, 415 when encoded (gzip). */
export function readRawBody(req: Request, res: Response): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    parseRaw(req, res, (err?: unknown) => {
      if (!err) return resolve(Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0));
      const type = (err as { type?: string }).type;
      if (type === 'entity.too.large') return reject(new PayloadTooLargeError(messages.tooLarge));
      if (type === 'encoding.unsupported') return reject(new HttpError(415, messages.encoded));
      reject(new BadRequestError((err as Error).message));
    });
  });
}

/**
 * Reads the request's JSON body: 400 `Invalid JSON body` when it does not parse, 413
 * `Request body too large` above 1 MiB, `undefined` when there is none. Handlers call it
 * after the key and resource checks, since the documented error precedence (docs/api.md)
 * ranks 401 and 404 above it.
 */
export function readJsonBody(req: Request, res: Response): Promise<unknown> {
  return new Promise((resolve, reject) => {
    parseJson(req, res, (err?: unknown) => {
      if (!err) return resolve(escapesSurrogates.has(req) ? wellFormedTexts(req.body) : req.body);
      const type = (err as { type?: string }).type;
      reject(type === 'entity.too.large' ? new PayloadTooLargeError(messages.tooLarge) : new BadRequestError(messages.invalidJson));
    });
  });
}
