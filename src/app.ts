import express, { type Express } from 'express';
import helmet from 'helmet';
import './http/express-augment.js';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import type { Services } from './services.js';
import { requestId } from './http/request-id.js';
import { requestLog } from './http/request-log.js';
import { requireApiKey } from './http/api-key-auth.js';
import { apiRateLimits } from './http/rate-limits.js';
import { healthRoutes } from './http/health.js';
import { apiDocsRoutes } from './api-docs/routes.js';
import { apiErrors, apiNotFound } from './http/api-errors.js';
import { refuseDeclaredTooLarge } from './http/json-body.js';
import { consoleRouter, type ConsoleOptions } from './console/index.js';
import { VIEWS_DIR } from './lib/paths.js';
import { requestRoutes } from './requests/routes.js';
import { entryRoutes } from './entries/routes.js';
import { chatRoutes } from './sessions/routes.js';

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
  app.set('view engine', 'ejs');
  app.set('views', VIEWS_DIR);
  app.disable('x-powered-by');
  // Bodies change with every poll; hashing each one for an ETag costs more than it saves.
  app.set('etag', false);
  app.set('trust proxy', config.trustProxy);
  app.use(requestId());
  app.use(requestLog(logger));
  app.use(
    helmet({
      // The console serves its own scripts and styles; nothing inline, nothing from elsewhere.
      contentSecurityPolicy: {
        directives: {
          'default-src': ["'self'"],
          'script-src': ["'self'"],
          'style-src': ["'self'"],
          'img-src': ["'self'", 'data:'],
          'connect-src': ["'self'"],
          'form-action': ["'self'"],
          'frame-ancestors': ["'none'"],
          'object-src': ["'none'"],
          'base-uri': ["'none'"],
        },
      },
    }),
  );

  app.use(services.metrics.http());
  app.use(healthRoutes({ config, services }));

  const limits = apiRateLimits(config.rateLimitPerMinute, services.rateLimitStore);
  const auth = [limits.beforeAuth, requireApiKey((key) => services.organizations.authenticate(key)), limits.afterAuth];
  const docs = apiDocsRoutes();
  app.use(docs.browser);
  const api = express.Router();
  api.use(refuseDeclaredTooLarge());
  api.use(docs.document);
  api.use(requestRoutes({ auth, scribes: services.scribes, requests: services.requests, idempotency: services.idempotency }));
  api.use(chatRoutes({ auth, scribes: services.scribes, sessions: services.sessions, idempotency: services.idempotency }));
  api.use(entryRoutes({ auth, entryTypes: services.entryTypes, entries: services.entries }));
  api.use(apiNotFound());
  api.use(apiErrors(logger));
  app.use('/api/v1', api);

  // Everything else is the staff console (HTML pages, its own 404 and error pages).
  app.use(consoleRouter({ services, logger, sessionSecret, options: consoleOptions }));
  return app;
}
