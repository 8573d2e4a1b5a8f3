import express, { type Request, type Response } from 'express';
import { BadRequestError, PayloadTooLargeError } from './errors.js';

export const messages = {
  invalidJson: 'Invalid JSON body',
  tooLarge: 'Request body too large',
};

export const BODY_LIMIT = '1mb';

// Any Content-Type is read as JSON, so a client that forgets the header still works.
const parseJson = express.json({ limit: BODY_LIMIT, strict: false, type: () => true });

/**
 * Reads the request's JSON body: 400 `Invalid JSON body` when it does not parse, 413
 * `Request body too large` above 1 MiB, `undefined` when there is none. Handlers call it
 * after the key and resource checks, since the contract ranks 401 and 404 above it.
 */
export function readJsonBody(req: Request, res: Response): Promise<unknown> {
  return new Promise((resolve, reject) => {
    parseJson(req, res, (err?: unknown) => {
      if (!err) return resolve(req.body);
      const type = (err as { type?: string }).type;
      reject(type === 'entity.too.large' ? new PayloadTooLargeError(messages.tooLarge) : new BadRequestError(messages.invalidJson));
    });
  });
}
