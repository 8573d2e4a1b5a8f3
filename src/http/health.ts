import { Router, type Request } from 'express';
import { timingSafeEqual } from 'node:crypto';
import type { Config } from '../config.js';
import type { Services } from '../services.js';

/** A background worker that has not looked for work for this long is not healthy. */
export const TICK_STALE_MS = 10_000;

/**
 * Operations endpoints, no API key: `/healthz` (the process answers), `/readyz` (it can do
 * its work: database writable, migrations current, and in a process that also does
 * background work (PROCESS_ROLE=all), dispatcher and agent runtime ticking)
 * and `/metrics` (Prometheus text; with METRICS_TOKEN set, only with that bearer token).
 */
export function healthRoutes({ config, services }: { config: Config; services: Services }): Router {
  // Exact paths only: Express would also answer /METRICS and /metrics/, which a proxy's
  // allow-list for /metrics (docs/deploy.md) does not cover.
  const router = Router({ caseSensitive: true, strict: true });

  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  router.get('/readyz', async (_req, res) => {
    const now = services.clock().getTime();
    const ticking = (last: Date | null) => (last && now - last.getTime() <= TICK_STALE_MS ? 'ok' : `no tick in the last ${TICK_STALE_MS / 1000}s`);
    const checks: Record<string, string> = {
      database: await services.maintenance.writable().then(
        () => 'ok',
        (err: Error) => `not writable: ${err.message}`,
      ),
      migrations: await services.maintenance.pendingMigrations().then(
        (pending) => (pending.length === 0 ? 'ok' : `pending: ${pending.join(', ')}`),
        (err: Error) => `cannot read migrations: ${err.message}`,
      ),
    };
    if (config.processRole === 'all') {
      checks.dispatcher = ticking(services.dispatcher.lastTickAt);
      checks.agents = ticking(services.runtime.lastTickAt);
    }
    const ready = Object.values(checks).every((c) => c === 'ok');
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not ready', checks });
  });

  router.get('/metrics', async (req, res) => {
    if (config.metricsToken && !bearerMatches(req, config.metricsToken)) {
      res.status(401).set('WWW-Authenticate', 'Bearer').json({ error: 'Unauthorized' });
      return;
    }
    const { contentType, text } = await services.metrics.scrape();
    res.type(contentType).send(text);
  });

  return router;
}

function bearerMatches(req: Request, token: string): boolean {
  // The scheme's name is case-insensitive (RFC 9110); the token is compared exactly.
  const given = Buffer.from(/^Bearer (.+)$/i.exec(req.get('authorization') ?? '')?.[1] ?? '');
  const wanted = Buffer.from(token);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}
