import { Router } from 'express';
import type { Services } from '../../services.js';
import { REQUEST_STATUSES } from '../../requests/schemas.js';

/** The dashboard: receipts by status, the health of the background workers, recent failures. */
export function dashboardRoutes(services: Services): Router {
  const router = Router();

  router.get('/', async (req, res) => {
    const org = req.user!.organization_id;
    const now = services.clock().getTime();
    const since = (ms: number) => new Date(now - ms).toISOString();
    const [lastHour, lastDay, dispatch, agents, failures] = await Promise.all([
      services.consoleReads.receiptCounts(org, since(3_600_000)),
      services.consoleReads.receiptCounts(org, since(86_400_000)),
      services.consoleReads.dispatchBacklog(org),
      services.consoleReads.agentBacklog(org),
      services.consoleReads.recentFailures(org),
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
