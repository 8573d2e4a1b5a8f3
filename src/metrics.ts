import type { RequestHandler } from 'express';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Db } from './db/knex.js';
import { agentCallTotals, type AgentCallTotals } from './agents/queries.js';
import { agentWork } from './runtime/queries.js';

export type Metrics = ReturnType<typeof createMetrics>;

/**
 * The process's Prometheus metrics (prom-client), one registry per set of services.
 * Figures kept in the database (receipts by status, agent backlog) are read when scraped.
 */
export function createMetrics(db: Db) {
  const registry = new Registry();
  // Process metrics start with the first scrape: the admin CLI and seeding build services too
  // and have no use for the event-loop and GC observers these start.
  let processMetrics = false;

  const httpRequests = new Counter({
    name: 'scribe_http_requests_total',
    help: 'HTTP requests by method, route and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const httpDuration = new Histogram({
    name: 'scribe_http_request_duration_seconds',
    help: 'HTTP request latency by method, route and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  const dispatchLatency = new Histogram({
    name: 'scribe_dispatch_latency_seconds',
    help: 'Time from a receipt accepted to fulfilled or failed.',
    labelNames: ['outcome'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  new Gauge({
    name: 'scribe_receipts',
    help: 'Receipts by status, all organizations.',
    labelNames: ['status'] as const,
    registers: [registry],
    async collect() {
      const rows: Array<{ status: string; n: number }> = await db('requests').groupBy('status').select('status').count({ n: '*' });
      this.reset();
      for (const status of ['accepted', 'dispatched', 'fulfilled', 'failed']) this.set({ status }, Number(rows.find((r) => r.status === status)?.n ?? 0));
    },
  });
  // Work of a powered-off scribe waits for it to be powered on: counted apart, so the backlog drains.
  const countWork = async (table: 'sessions' | 'tasks', active: boolean) => Number((await agentWork(db, table, { active }).count({ n: '*' }).first())?.n ?? 0);
  for (const [name, help, active] of [
    ['scribe_agent_backlog', 'Work waiting for the agent runtime on active scribes: sessions owing an answer, tasks open or in progress.', true],
    ['scribe_agent_parked', 'Work queued for scribes that are not active (powered off): it waits until they are powered on.', false],
  ] as const) {
    new Gauge({
      name,
      help,
      labelNames: ['kind'] as const,
      registers: [registry],
      async collect() {
        this.set({ kind: 'sessions' }, await countWork('sessions', active));
        this.set({ kind: 'tasks' }, await countWork('tasks', active));
      },
    });
  }
  // The agents' calls, from their traces: counted in the database, so every process reports
  // the same totals (a process's own counters would each see a part).
  const agentTotals = (name: string, help: string, of: (t: AgentCallTotals) => number) => ({ name, help, of });
  const agentFigures = [
    agentTotals('scribe_agent_model_calls', 'Model calls made by the openai agent, by scribe.', (t) => t.model_calls),
    agentTotals('scribe_agent_tool_calls', 'Tool calls made by agents, by scribe.', (t) => t.tool_calls),
    agentTotals('scribe_agent_call_errors', 'Model and tool calls that failed, by scribe.', (t) => t.errors),
  ];
  let totals: Promise<AgentCallTotals[]> | undefined;
  // One query per scrape serves all four gauges.
  const readTotals = () => (totals ??= agentCallTotals(db).finally(() => setTimeout(() => (totals = undefined), 0)));
  for (const figure of agentFigures) {
    new Gauge({
      name: figure.name,
      help: figure.help,
      labelNames: ['organization', 'scribe'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        for (const t of await readTotals()) this.set({ organization: t.organization_id, scribe: t.scribe_slug }, figure.of(t));
      },
    });
  }
  new Gauge({
    name: 'scribe_agent_tokens',
    help: 'Tokens the model calls used, by scribe and direction (input, output), as the responses reported them.',
    labelNames: ['organization', 'scribe', 'direction'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const t of await readTotals()) {
        this.set({ organization: t.organization_id, scribe: t.scribe_slug, direction: 'input' }, t.input_tokens);
        this.set({ organization: t.organization_id, scribe: t.scribe_slug, direction: 'output' }, t.output_tokens);
      }
    },
  });

  return {
    /** The Prometheus text of every metric, with its content type. */
    async scrape(): Promise<{ contentType: string; text: string }> {
      if (!processMetrics) {
        collectDefaultMetrics({ register: registry });
        processMetrics = true;
      }
      return { contentType: registry.contentType, text: await registry.metrics() };
    },
    /** Counts and times every request by its route pattern (not its path: ids would explode the label). */
    http(): RequestHandler {
      return (req, res, next) => {
        const started = process.hrtime.bigint();
        res.once('finish', () => {
          const route = req.route ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
          const labels = { method: req.method, route, status: String(res.statusCode) };
          httpRequests.inc(labels);
          httpDuration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
        });
        next();
      };
    },
    /** A receipt left the dispatcher `ms` after it was accepted. */
    dispatched(outcome: 'fulfilled' | 'failed', ms: number): void {
      dispatchLatency.observe({ outcome }, ms / 1000);
    },
  };
}
