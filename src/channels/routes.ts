import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { readRawBody, refuseDeclaredTooLarge } from '../http/json-body.js';
import { HttpError, NotFoundError } from '../http/errors.js';
import type { ChannelService } from './service.js';
import { messages } from './service.js';

const senderOf = (req: Request) => req.ip ?? 'unknown';

/** Tokens are 24 random bytes in base64url; anything else names no channel and costs no query. */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{32}$/;

/**
 * `POST /inbound/<token>` (mounted at /inbound): an inbound webhook channel (no API key; the token and the
 * channel's signature preset stand in for it). Unknown or disabled token → 404 `Not found`,
 * counted per address like a refused key; then the channel's rate limit (429), the 1 MiB cap
 * (413), and the channel service's answer. Errors are `{"error"}` as in the task family.
 */
export function inboundRoutes({ channels, perChannel, countRefusal }: { channels: ChannelService; perChannel: RequestHandler; countRefusal?: RequestHandler }) {
  const router = Router();

  router.post(
    '/:token',
    async (req, res, next) => {
      const token = String(req.params.token);
      const channel = TOKEN_PATTERN.test(token) ? await channels.webhookChannel(token) : undefined;
      if (channel) {
        res.locals.channel = channel;
        res.locals.channelId = channel.id;
        return next();
      }
      const notFound = new NotFoundError(messages.notFound);
      if (!countRefusal) throw notFound;
      await countRefusal(req, res, (err?: unknown) => next(err ?? notFound));
    },
    perChannel,
    refuseDeclaredTooLarge(),
    async (req, res) => {
      const body = await readRawBody(req, res);
      const result = await channels.receiveWebhook(res.locals.channel, { headers: req.headers, body, contentType: req.get('content-type'), sender: senderOf(req) });
      res.status(result.status).json(result.body);
    },
  );

  // A body refused before the channel read it (413, 415) is in the channel's delivery log too;
  // a delivery over the rate limit (429) is not, or a flood would write a row for each.
  router.use(async (err: unknown, req: Request, res: Response, next: NextFunction) => {
    if (res.locals.channel && err instanceof HttpError && err.status !== 429) await channels.recordRefusal(res.locals.channel, senderOf(req), err.status, err.message);
    next(err);
  });

  return router;
}
