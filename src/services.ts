import path from 'node:path';
import type { Config } from './config.js';
import type { Db } from './db/knex.js';
import type { Logger } from './logger.js';
import { type Clock, systemClock } from './lib/clock.js';
import { createOrganizationService } from './organizations/service.js';
import { createScribeService } from './scribes/service.js';
import { findScribesByIds } from './scribes/queries.js';
import { createUserService } from './users/service.js';
import type { PasswordCost } from './users/passwords.js';
import { createEntryTypeService } from './entries/entry-type-service.js';
import { type ReadWorkerOptions, createReadWorkers } from './entries/read-workers.js';
import { createEntryService } from './entries/entry-service.js';
import { createRequestService } from './requests/service.js';
import { createDispatcher, defaultDispatcherOptions, type DispatcherOptions } from './requests/queue.js';
import { anyAddress, publicAddressesOnly, type AddressPolicy } from './net/address-policy.js';
import { createGuardedLeanFetch } from './net/guarded-agent.js';
import { Agent as UndiciAgent } from 'undici';
import { followingRedirects, leanFetch } from './net/lean-fetch.js';
import { claimConnections } from './db/knex.js';
import { groupBy } from './lib/group-by.js';
import { openSecretBox } from './secrets/keys.js';
import type { SecretBox } from './secrets/secret-box.js';
import { createDownloader, type DownloadLimits } from './requests/attachments/download.js';
import { createOutbox } from './webhooks/events.js';
import { createTrace } from './agents/trace.js';
import { listAgentCalls, listMcpServersOf } from './agents/queries.js';
import { createMcpConnector, defaultMcpLimits, type McpLimits } from './agents/mcp.js';
import { createMcpServerService } from './agents/mcp-servers.js';
import { storedAttachments } from './agents/attachments.js';
import { listAttachmentsOf } from './requests/queries.js';
import { createSender, type SendOptions } from './webhooks/send.js';
import { createWebhookService } from './webhooks/service.js';
import { createWebhookWorker, defaultWebhookWorkerOptions, type WebhookWorkerOptions } from './webhooks/queue.js';
import { createAttachmentFetcher } from './requests/attachments/fetch.js';
import { createAttachmentStore } from './requests/attachments/store.js';
import { createAuditLog } from './audit/service.js';
import { createMetrics } from './metrics.js';
import { createRetention } from './retention.js';
import { createMaintenance } from './maintenance.js';
import { createConsoleReads } from './console/queries.js';
import { ConnectSessionKnexStore } from 'connect-session-knex';
import { DatabaseRateLimitStore } from './http/rate-limit-store.js';
import { createWakeups } from './db/wakeups.js';
import { createStreamFeed, defaultFeedOptions, type FeedOptions } from './streams/feed.js';
import { createJobs } from './jobs/queue.js';
import { maintenanceJobs } from './jobs/registry.js';
import { createBackground } from './work/background.js';
import { createIdempotency } from './http/idempotency.js';
import { createSessionService } from './sessions/service.js';
import { createTaskService } from './tasks/service.js';
import { createChannelService } from './channels/service.js';
import { createScheduleService } from './schedules/service.js';
import { defaultScheduleOptions, type ScheduleOptions } from './schedules/queue.js';
import { groupCommits } from './db/group-commit.js';
import { createAgentRuntime, defaultRuntimeOptions, type RuntimeOptions } from './runtime/queue.js';
import { createBuiltinAgent } from './agents/builtin.js';
import { createOpenAiAgent } from './agents/openai.js';
import { createToolbox } from './agents/toolbox.js';
import type { Agent } from './agents/agent.js';
import type { AgentKind } from './scribes/service.js';

export const defaultDownloadLimits: DownloadLimits = {
  timeoutMs: 10_000,
  maxBytes: 25 * 1024 * 1024,
  maxRedirects: 5,
};

/** Knobs the environment does not set; tests turn them. */
export interface ServiceOptions {
  clock?: Clock;
  downloadLimits?: Partial<DownloadLimits>;
  addressPolicy?: AddressPolicy;
  /** Replaces WEBHOOKS_ALLOW_PRIVATE's choice of where webhooks may connect (tests). */
  webhookAddressPolicy?: AddressPolicy;
  /** Replaces MODELS_ALLOW_PRIVATE's choice of where scribes' own model endpoints may be (tests). */
  modelAddressPolicy?: AddressPolicy;
  webhooks?: Partial<WebhookWorkerOptions & SendOptions>;
  /** Shorter MCP timeouts and caps (tests). */
  mcp?: Partial<McpLimits>;
  /** The API's event streams: how often they look for new events (tests shorten it). */
  streams?: Partial<FeedOptions>;
  dispatcher?: Partial<DispatcherOptions>;
  /** False leaves accepted receipts for an explicit tick (tests that watch each state). */
  dispatchOnAccept?: boolean;
  runtime?: Partial<RuntimeOptions>;
  /** False leaves new sessions and tasks for an explicit runtime tick (tests that watch each state). */
  runOnNewWork?: boolean;
  /** False leaves new webhook deliveries for an explicit tick of the webhook worker (the demo's seed, which attempts each at its time). */
  deliverOnEvent?: boolean;
  /** Replaces the agents by kind (tests). */
  agents?: Partial<Record<AgentKind, Agent>>;
  /** Told each time an answer under way is stored anew (tests count the writes). */
  onDraftSaved?: (work: { kind: 'session' | 'task'; id: string }, text: string) => void;
  /** Most matches a search lists from its indexes (see driveLimitFor in search/compile.ts); -1 always reads in page order. */
  searchDriveLimit?: number;
  schedules?: Partial<ScheduleOptions>;
  /** Replaces how long an entry read may take (5 s) and the module the read threads run (tests). */
  reads?: Partial<ReadWorkerOptions>;
  /** Replaces READ_THREADS: 0 reads entries in this thread (the demo's seed, whose few searches are not worth starting threads for). */
  readThreads?: number;
  /** Replaces scrypt's cost for passwords set from now on (tests, which set hundreds: one at the real cost is tens of ms of CPU). */
  passwordCost?: PasswordCost;
}

export type Services = ReturnType<typeof createServices>;

/**
 * Wires the domain services together; opens nothing and starts nothing. `secrets` seals the
 * stored secrets: the install's box (secrets/keys.ts) unless given, which the caller also
 * migrates with.
 */
export function createServices({
  config,
  db,
  logger,
  secrets = openSecretBox(config),
  options = {},
}: {
  config: Config;
  db: Db;
  logger: Logger;
  secrets?: SecretBox;
  options?: ServiceOptions;
}) {
  const clock = options.clock ?? systemClock;
  const metrics = createMetrics(db);
  // Claims and the dispatcher on connections of their own where the database has them: a new
  // receipt and its run do not wait in line behind the writes of every run in flight.
  const claimsDb = claimConnections(db);
  const wakeups = createWakeups({ db, url: config.databaseUrl, logger });
  const store = createAttachmentStore(path.join(config.dataDir, 'attachments'));
  // Where user-supplied URLs may lead: attachments and MCP servers (ATTACHMENTS_ALLOW_PRIVATE), webhooks
  // (WEBHOOKS_ALLOW_PRIVATE), scribes' own model endpoints (MODELS_ALLOW_PRIVATE).
  const attachmentPolicy = options.addressPolicy ?? (config.attachmentsAllowPrivate ? anyAddress : publicAddressesOnly);
  const webhookPolicy = options.webhookAddressPolicy ?? (config.webhooksAllowPrivate ? anyAddress : publicAddressesOnly);
  const modelPolicy = options.modelAddressPolicy ?? (config.modelsAllowPrivate ? anyAddress : publicAddressesOnly);
  // Model endpoints get many small calls: both go through undici's request() (net/lean-fetch.ts).
  const endpointFetch = leanFetch(new UndiciAgent(), followingRedirects());
  const scribeEndpointFetch = createGuardedLeanFetch(modelPolicy);
  const downloader = createDownloader(attachmentPolicy, { ...defaultDownloadLimits, ...options.downloadLimits });
  // Outbound webhooks: events written with the changes they report, sent by the worker.
  const webhookOptions = { ...defaultWebhookWorkerOptions, timeoutMs: 15_000, ...options.webhooks };
  const webhookWorker = createWebhookWorker({ db, clock, logger, sender: createSender(webhookPolicy, webhookOptions), secrets, options: webhookOptions });
  const deliverOnEvent = options.deliverOnEvent ?? true;
  const outbox = createOutbox({
    clock,
    onRecorded: (eventId) => {
      if (deliverOnEvent) webhookWorker.nudge();
      void wakeups.notify('scribe_webhooks', eventId);
    },
  });
  const connectMcp = createMcpConnector(attachmentPolicy, { ...defaultMcpLimits, ...options.mcp });
  const dispatcher = createDispatcher({
    db: claimsDb,
    clock,
    logger,
    wakeups,
    options: { ...defaultDispatcherOptions, ...options.dispatcher },
    createTasks: (trx, receipts, at) => tasks.createForReceipts(trx, receipts, at),
    recordEvents: outbox.record,
    // The tasks it made are worked here first; other processes find them as they poll.
    onTasksCreated: () => {
      if (runOnNewWork) runtime.nudge();
    },
    onFinished: (outcome, ms) => metrics.dispatched(outcome, ms),
  });
  const dispatchOnAccept = options.dispatchOnAccept ?? true;
  const audit = createAuditLog({ db, clock });
  const entryTypes = createEntryTypeService({ db, clock });
  const readThreads = options.readThreads ?? config.readThreads;
  const readWorkers =
    readThreads > 0 ? createReadWorkers({ threads: readThreads, databaseFile: config.databaseUrl, searchDriveLimit: options.searchDriveLimit, ...options.reads }) : undefined;
  const entries = createEntryService({ db, clock, entryTypes, readWorkers, searchDriveLimit: options.searchDriveLimit, readTimeoutMs: options.reads?.timeoutMs });

  // New sessions, tasks given input and scribes powered on wake the runtime at once;
  // the cron job is the backstop. Fulfilled receipts reach it through that job too.
  const runOnNewWork = options.runOnNewWork ?? true;
  const wakeRuntime = (id: string) => {
    if (runOnNewWork) runtime.nudge();
    void wakeups.notify('scribe_work', id);
  };
  const scribes = createScribeService({ db, clock, modelPolicy, secrets, onActivated: wakeRuntime });
  // A cancel stops the run here at once, and in another process by NOTIFY (or its runtime's look, on SQLite).
  const stopRun = (id: string) => {
    runtime.cancel(id);
    void wakeups.notify('scribe_cancel', id);
  };
  const sessions = createSessionService({ db, clock, audit, recordEvents: outbox.record, onReplyDue: wakeRuntime, onCancelled: stopRun });
  const tasks = createTaskService({ db, clock, audit, recordEvents: outbox.record, onOpened: wakeRuntime, onCancelled: stopRun });
  const agents: Record<AgentKind, Agent> = {
    builtin: createBuiltinAgent(),
    openai: createOpenAiAgent(config.openai, logger, { connectMcp, endpointFetch, scribeEndpointFetch, secrets }),
    ...options.agents,
  };
  const runtimeOptions = { ...defaultRuntimeOptions, concurrency: config.agentConcurrency, ...options.runtime };
  // Runs' small writes (trace calls, drafts, finishes) share commits where that pays (SQLite).
  // Only while runs overlap: a lone run's writes (a quiet install's) wait for no one.
  const runWrites = groupCommits(db, { gapMs: () => runtime.commitGapMs() });
  const runtime = createAgentRuntime({
    db,
    claimsDb,
    clock,
    logger,
    agentFor: (kind) => agents[kind],
    // Read for each claim, with it.
    findScribes: (ids) => findScribesByIds(claimsDb, ids),
    toolboxFor: (scribe) => createToolbox(scribe, { entryTypes, entries, tasks }),
    recordEvents: outbox.record,
    traceFor: (work, store) => createTrace(store, clock, work, (err) => logger.warn({ err, ...work }, 'could not store a call of a trace')),
    writes: runWrites,
    mcpServersOf: (scribeIds) => listMcpServersOf(claimsDb, secrets, scribeIds),
    // Work given back as this process stops: another process takes it at once (PostgreSQL) or on its next look.
    wakeups,
    onDraftSaved: options.onDraftSaved,
    attachmentsOf: async (tasks) => {
      const rows = await listAttachmentsOf(
        claimsDb,
        tasks.flatMap((task) => (task.request_id ? [task.request_id] : [])),
      );
      const byRequest = groupBy(rows, (row) => row.request_id);
      return new Map(tasks.map((task) => [task.id, storedAttachments(byRequest.get(task.request_id ?? '') ?? [], (sha256) => store.pathFor(sha256))]));
    },
    options: runtimeOptions,
  });

  const requests = createRequestService({
    db,
    clock,
    fetchAttachments: createAttachmentFetcher({ downloader, store }),
    audit,
    // A process that dispatches wakes its own dispatcher, which claims the receipt at once;
    // one that does not (PROCESS_ROLE=web) wakes the others'.
    onAccepted: (id) => {
      if (dispatchOnAccept) dispatcher.nudge();
      else void wakeups.notify('scribe_requests', id);
    },
  });

  const schedules = createScheduleService({ db, clock, logger, audit, requests, scribes, options: { ...defaultScheduleOptions, ...options.schedules } });
  const idempotency = createIdempotency({ db, clock });
  const retention = createRetention({ db, clock, logger, attachmentsDir: path.join(config.dataDir, 'attachments'), config: config.retention });
  const maintenance = createMaintenance({ db, clock });
  // Every process that does background work runs every queue: their claims keep each item to one process.
  const background = createBackground({
    runners: [dispatcher, schedules.firing, webhookWorker, runtime, createJobs({ db, clock, logger, jobs: maintenanceJobs({ idempotency, retention, maintenance }) })],
    wakeups,
  });

  const sessionStores: ConnectSessionKnexStore[] = [];
  const streams = createStreamFeed({ db, url: config.databaseUrl, logger, options: { ...defaultFeedOptions, ...options.streams } });

  return {
    db,
    clock,
    /** Seals and opens the stored secrets (secrets/secret-box.ts). */
    secrets,
    organizations: createOrganizationService({ db, clock, logger }),
    scribes,
    users: createUserService({ db, clock, audit, publicUrl: config.publicUrl, passwordCost: options.passwordCost }),
    entryTypes,
    entries,
    /** Where entry pages are read (undefined: in this thread). */
    readWorkers,
    audit,
    sessions,
    tasks,
    requests,
    schedules,
    channels: createChannelService({ db, clock, logger, audit, requests, sessions, scribes, secrets }),
    webhooks: createWebhookService({ db, clock, audit, policy: webhookPolicy, secrets, recordEvents: outbox.record }),
    webhookWorker,
    /** The MCP servers scribes take tools from (agents/mcp-servers.ts). */
    mcpServers: createMcpServerService({ db, clock, audit, scribes, policy: attachmentPolicy, secrets }),
    /** The model and tool calls a task's or a session's agent runs made, in order (agents/trace.ts). */
    traces: { of: (work: { taskId: string } | { sessionId: string }) => listAgentCalls(db, work) },
    dispatcher,
    runtime,
    metrics,
    idempotency,
    retention,
    maintenance,
    /** The console's own reads (lists with filters, the dashboard's figures). */
    consoleReads: createConsoleReads(db),
    /** Where console sign-ins are kept: a table, so any process reads any cookie. */
    consoleSessionStore: () => {
      const store = new ConnectSessionKnexStore({ knex: db, tableName: 'console_sessions', createTable: false, cleanupInterval: 0 });
      sessionStores.push(store);
      return store;
    },
    /** Rate-limit counters of the limit `name`, shared by every process on the database. */
    rateLimitStore: (name: string) => new DatabaseRateLimitStore(db, clock, name),
    attachmentStore: store,
    /** Wakes the processes on this database when work arrives (PostgreSQL's LISTEN/NOTIFY; db/wakeups.ts). */
    wakeups,
    /** Wakes the API's open event streams when their task or session has new events (streams/feed.ts). */
    streams,
    /** The queues and jobs a process that does background work runs (work/background.ts). */
    background,
    /** Stops background work and releases sockets; the caller closes the database. */
    async stop(): Promise<void> {
      // A store checks its table when made; closing the pool under that query fails it noisily.
      await Promise.allSettled(sessionStores.map((store) => store.ready));
      await wakeups.close();
      await streams.close();
      await background.stop();
      await connectMcp.close();
      await endpointFetch.close();
      await scribeEndpointFetch.close();
      await downloader.close();
      await readWorkers?.close();
      if (claimsDb !== db) await claimsDb.destroy();
    },
  };
}
