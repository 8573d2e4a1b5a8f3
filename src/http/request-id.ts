import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';

const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Every response carries `X-Request-Id`: the caller's when it sent a sane one, else a new UUID. */
export function requestId(): RequestHandler {
  return (req, res, next) => {
    const given = req.get('x-request-id');
    req.id = given && SANE_ID.test(given) ? given : randomUUID();
    res.setHeader('X-Request-Id', req.id);
    next();
  };
}
