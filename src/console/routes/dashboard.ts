import { Router } from 'express';
import type { Services } from '../../services.js';
import { agentBacklog, dispatchBacklog, receiptCounts, recentFailures } from '../queries.js';
import { REQUEST_STATUSES } from '../../requests/schemas.js';

/** The dashboard: receipts by status, the health of the background workers, recent failures. */
export function dashboardRoutes(services: Services): Router {
  const router = Router();

  router.get('/', async (req, res) => {
    const org = req.user!.organization_id;
    const now = services.clock().getTime();
    const since = (ms: number) => new Date(now - ms).toISOString();
    const [lastHour, lastDay, dispatch, agents, failures] = await Promise.all([
      receiptCounts(services.db, org, since(3_600_000)),
      receiptCounts(services.db, org, since(86_400_000)),
      dispatchBacklog(services.db, org),
      agentBacklog(services.db, org),
      recentFailures(services.db, org),
    ]);
    res.render('dashboard', {
      title: 'Dashboard',
      statuses: REQUEST_STATUSES,
      lastHour,
      lastDay,
      workers: [
        { name: 'Dispatcher', lastTick: services.dispatcher.lastTickAt?.toISOString() ?? null, backlog: `${dispatch.count} receipts`, oldest: dispatch.oldest },
        {
          name: 'Agent runtime',
          lastTick: services.runtime.lastTickAt?.toISOString() ?? null,
          backlog: `${agents.sessions} sessions, ${agents.tasks} tasks (${services.runtime.running} running)`,
          oldest: agents.oldest,
        },
      ],
      now: new Date(now).toISOString(),
      failures,
    });
  });

  return router;
}
