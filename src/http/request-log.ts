import type { RequestHandler } from 'express';
import type { Logger } from '../logger.js';
import { isLiveRefresh } from '../console/live.js';

/**
 * One pino line per finished request: id, method, path, status, time. Unlike pino-http it
 * builds no child logger and serializes nothing until the line is actually written: pino-http
 * builds `logger.child({ req })` for every request, whatever the level, and that was one of the
 * largest costs of an API call (the same finding made Fastify log request details once).
 */
export function requestLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      // A console page refreshing itself (public/live.js) every few seconds is not news.
      const level = res.statusCode >= 500 ? 'error' : isLiveRefresh(req) ? 'debug' : 'info';
      if (!logger.isLevelEnabled(level)) return;
      logger[level](
        {
          requestId: req.id,
          method: req.method,
          path: loggedPath(req.originalUrl),
          status: res.statusCode,
          ms: Number(process.hrtime.bigint() - started) / 1e6,
          remoteAddress: req.ip,
        },
        'request completed',
      );
    });
    next();
  };
}

/**
 * The path as logged, without the tokens that are credentials: an invitation or reset link's
 * (a password's equal) and an inbound channel's (whoever holds its URL may send to the
 * scribe). Routes match paths whatever their letter case, so this does too.
 */
export function loggedPath(url: string): string {
  return url.replace(/^\/(invite|inbound)\/[^/?#]+/i, '/$1/[redacted]');
}
