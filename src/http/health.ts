import { Router, type Request } from 'express';
import { timingSafeEqual } from 'node:crypto';
import type { Config } from '../config.js';
import type { Services } from '../services.js';
import { pendingMigrations } from '../db/migrate.js';

/** A background worker that has not looked for work for this long is not healthy. */
export const TICK_STALE_MS = 10_000;

/**
 * Operations endpoints, no API key: `/healthz` (the process answers), `/readyz` (it can do
 * its work: database writable, migrations current, dispatcher and agent runtime ticking)
 * and `/metrics` (Prometheus text; with METRICS_TOKEN set, only with that bearer token).
 */
export function healthRoutes({ config, services }: { config: Config; services: Services }): Router {
  const router = Router();

  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  router.get('/readyz', async (_req, res) => {
    const now = services.clock().getTime();
    const ticking = (last: Date | null) => (last && now - last.getTime() <= TICK_STALE_MS ? 'ok' : `no tick in the last ${TICK_STALE_MS / 1000}s`);
    const checks = {
      database: await databaseWritable(services),
      migrations: await pendingMigrations(services.db).then(
        (pending) => (pending.length === 0 ? 'ok' : `pending: ${pending.join(', ')}`),
        (err: Error) => `cannot read migrations: ${err.message}`,
      ),
      dispatcher: ticking(services.dispatcher.lastTickAt),
      agents: ticking(services.runtime.lastTickAt),
    };
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

/** A write that changes nothing: refused when the file is read-only or the disk is gone. */
async function databaseWritable(services: Services): Promise<string> {
  try {
    await services.db.transaction((trx) => trx('organizations').whereRaw('1 = 0').update({ name: '' }));
    return 'ok';
  } catch (err) {
    return `not writable: ${(err as Error).message}`;
  }
}

function bearerMatches(req: Request, token: string): boolean {
  const given = Buffer.from(/^Bearer (.+)$/.exec(req.get('authorization') ?? '')?.[1] ?? '');
  const wanted = Buffer.from(token);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}
