import express, { type Express } from 'express';
import './http/express-augment.js';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import type { Services } from './services.js';
import { requestId } from './http/request-id.js';
import { requestLog } from './http/request-log.js';
import { securityHeaders } from './http/security-headers.js';
import { requireApiKey } from './http/api-key-auth.js';
import { apiRateLimits } from './http/rate-limits.js';
import { healthRoutes } from './http/health.js';
import { apiDocsRoutes } from './api-docs/routes.js';
import { apiErrors, apiNotFound, apiRefuseOptions } from './http/api-errors.js';
import { refuseDeclaredTooLarge } from './http/json-body.js';
import { consoleRouter, type ConsoleOptions } from './console/index.js';
import { VIEWS_DIR } from './lib/paths.js';
import { viewEngine } from './console/view-engine.js';
import { requestRoutes } from './requests/routes.js';
import { entryRoutes } from './entries/routes.js';
import { chatRoutes } from './sessions/routes.js';
import { taskRoutes } from './tasks/routes.js';
import { streamRoutes } from './streams/routes.js';
import { inboundRoutes } from './channels/routes.js';

/** Builds the HTTP app from its dependencies; opens, listens and schedules nothing. */
export function createApp({
  config,
  logger,
  services,
  sessionSecret,
  consoleOptions,
}: {
  config: Config;
  logger: Logger;
  services: Services;
  /** Signs console session cookies (see console/session-secret.ts). */
  sessionSecret: string;
  consoleOptions?: ConsoleOptions;
}): Express {
  const app = express();
  // Express caches compiled views only under NODE_ENV=production, which no install is told to set:
  // without it every console page compiled its templates again, a quarter of its CPU.
  app.engine('ejs', viewEngine(config.cacheViews));
  app.set('view engine', 'ejs');
  app.set('views', VIEWS_DIR);
  app.set('view cache', config.cacheViews);
  app.disable('x-powered-by');
  // Bodies change with every poll; hashing each one for an ETag costs more than it saves.
  app.set('etag', false);
  app.set('trust proxy', config.trustProxy);
  app.use(requestId());
  app.use(requestLog(logger));
  app.use(securityHeaders());

  app.use(services.metrics.http());
  app.use(healthRoutes({ config, services }));

  const limits = apiRateLimits(config.rateLimitPerMinute, services.rateLimitStore);
  const auth = [requireApiKey((key) => services.organizations.authenticate(key), limits.refused), limits.perKey];
  const docs = apiDocsRoutes();
  app.use(docs.browser);
  const api = express.Router();
  api.use(apiRefuseOptions());
  api.use(refuseDeclaredTooLarge());
  api.use(docs.document);
  api.use(requestRoutes({ auth, scribes: services.scribes, requests: services.requests, idempotency: services.idempotency }));
  api.use(chatRoutes({ auth, scribes: services.scribes, sessions: services.sessions, idempotency: services.idempotency }));
  api.use(taskRoutes({ auth, scribes: services.scribes, tasks: services.tasks, idempotency: services.idempotency }));
  api.use(streamRoutes({ auth, db: services.db, tasks: services.tasks, sessions: services.sessions, feed: services.streams, logger }));
  api.use(entryRoutes({ auth, entryTypes: services.entryTypes, entries: services.entries }));
  api.use(apiNotFound());
  api.use(apiErrors(logger));
  app.use('/api/v1', api);

  const inbound = express.Router();
  inbound.use(apiRefuseOptions());
  inbound.use(inboundRoutes({ channels: services.channels, perChannel: limits.perChannel, countRefusal: limits.refused }));
  inbound.use(apiNotFound());
  inbound.use(apiErrors(logger));
  app.use('/inbound', inbound);

  // Everything else is the staff console (HTML pages, its own 404 and error pages).
  app.use(consoleRouter({ services, logger, sessionSecret, options: consoleOptions }));
  return app;
}
