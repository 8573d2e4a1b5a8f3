import { Router } from 'express';
import type { Services } from '../../services.js';
import { REQUEST_STATUSES } from '../../requests/schemas.js';
import { dashboardCharts } from '../activity-charts.js';
import { zoneClock } from '../charts.js';
import { isLiveRefresh } from '../live.js';
import { render } from '../views.js';

/** The dashboard: receipts over the last hours (charts), receipts by status, the health of the background workers, recent failures. */
export function dashboardRoutes(services: Services): Router {
  const router = Router();

  router.get('/', async (req, res) => {
    const org = req.user!.organization_id;
    const now = services.clock().getTime();
    const since = (ms: number) => new Date(now - ms).toISOString();
    const [charts, lastHour, lastDay, dispatch, agents, failures] = await Promise.all([
      // A live refresh swaps only the parts marked data-live-part, and the charts are not one.
      isLiveRefresh(req) ? null : dashboardCharts(services.consoleReads, org, now, zoneClock(res.locals.timeZone)),
      services.consoleReads.receiptCounts(org, since(3_600_000)),
      services.consoleReads.receiptCounts(org, since(86_400_000)),
      services.consoleReads.dispatchBacklog(org),
      services.consoleReads.agentBacklog(org),
      services.consoleReads.recentFailures(org),
    ]);
    render(res, 'dashboard', {
      title: 'Dashboard',
      charts,
      statuses: REQUEST_STATUSES,
      lastHour,
      lastDay,
      workers: [
        { name: 'Dispatcher', lastTick: services.dispatcher.lastTickAt?.toISOString() ?? null, backlog: count(dispatch.count, 'receipt'), oldest: dispatch.oldest, parked: null },
        {
          name: 'Agent runtime',
          lastTick: services.runtime.lastTickAt?.toISOString() ?? null,
          backlog: `${count(agents.waiting.sessions, 'session')}, ${count(agents.waiting.tasks, 'task')} (${services.runtime.running} running)`,
          oldest: agents.waiting.oldest,
          parked: agents.parked.sessions + agents.parked.tasks > 0 ? `${count(agents.parked.sessions, 'session')}, ${count(agents.parked.tasks, 'task')}` : null,
        },
      ],
      failures,
    });
  });

  return router;
}

/** `1 session`, `2 tasks`. */
const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;
