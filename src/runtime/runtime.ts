import { randomUUID } from 'node:crypto';
import type { Db } from '../db/knex.js';
import type { Logger } from '../logger.js';
import { type Clock, laterThan } from '../lib/clock.js';
import type { Agent } from '../agents/agent.js';
import type { Toolbox } from '../agents/toolbox.js';
import { noTrace, type Trace } from '../agents/trace.js';
import type { AgentAttachment } from '../agents/attachments.js';
import type { McpServerRow } from '../agents/queries.js';
import type { AgentKind, ScribeRow } from '../scribes/service.js';
import { finishSession, findMessages, saveDraftMessage, type SessionRow } from '../sessions/queries.js';
import { findTaskEvents, moveTask, saveDraftEvent, type WorkedTaskRow } from '../tasks/queries.js';
import { createReplyWriter, type ReplyWriter } from '../agents/reply-writer.js';
import { keepLeases } from '../db/claims.js';
import { sessionEvent, taskEvent, type RecordEvents } from '../webhooks/events.js';
import * as queries from './queries.js';
import { settledWithin } from '../lib/settled-within.js';

export interface RuntimeOptions {
  /** Runs (sessions and tasks worked) in flight at once in this process (AGENT_CONCURRENCY). */
  concurrency: number;
  /** How long a claim is exclusive unless renewed; work renews it every `renewMs` while it runs, so only a dead process loses its work. */
  leaseMs: number;
  /** How often running work renews its lease (a third of the lease by default). */
  renewMs: number;
  /** Claims of one piece of work (each crash of a worker costs one) before it is failed. */
  maxAttempts: number;
  /** How often, while work runs, the runtime looks for its work cancelled by another process (one query a table). */
  cancelCheckMs: number;
}

export const defaultRuntimeOptions: RuntimeOptions = {
  concurrency: 100,
  leaseMs: 30_000,
  renewMs: 10_000,
  maxAttempts: 3,
  cancelCheckMs: 1_000,
};

export const messages = {
  sessionFailed: (reason: string) => `The scribe could not answer: ${reason}`,
  taskFailed: (reason: string) => `The scribe could not finish this task: ${reason}. Give input to try again.`,
  gaveUp: (attempts: number) => `gave up after ${attempts} attempts`,
};

export interface RuntimeTickResult {
  sessions: number;
  tasks: number;
}

type Work = queries.Run;

export type AgentRuntime = ReturnType<typeof createAgentRuntime>;

/**
 * Works chat sessions and tasks of active scribes in the background, up to `concurrency`
 * runs at once. `fill()` claims as much due work as there are free slots, shared among
 * scribes in turn and within each scribe's cap across processes (queries.ts, "Slots and
 * turns"), and starts it; `tick()` also waits for what it
 * started (tests drive it). Claims are leased, so work held by a crashed process is taken
 * up again once its lease runs out; finishing is guarded by the claim token, so work
 * taken over is never recorded twice.
 */
export function createAgentRuntime({
  db,
  clock,
  logger,
  agentFor,
  findScribe,
  toolboxFor,
  recordEvents = async () => [],
  traceFor = () => noTrace,
  attachmentsOf = async () => [],
  mcpServersOf = async () => [],
  onHandedBack = () => {},
  onDraftSaved = () => {},
  options = defaultRuntimeOptions,
}: {
  db: Db;
  clock: Clock;
  logger: Logger;
  agentFor: (kind: AgentKind) => Agent;
  findScribe: (id: string) => Promise<ScribeRow | undefined>;
  toolboxFor: (scribe: ScribeRow) => Toolbox;
  /** Writes a finished answer's or task's webhook event in the transaction that records it (the outbox). */
  recordEvents?: RecordEvents;
  /** Where a run of the agent on a task or a session answer reports its calls (agents/trace.ts). */
  traceFor?: (work: { organizationId: string; scribeId: string; taskId?: string; sessionId?: string }) => Trace;
  /** The stored files of the receipt a task came from (agents/attachments.ts). */
  attachmentsOf?: (task: WorkedTaskRow) => Promise<AgentAttachment[]>;
  /** The MCP servers whose tools the scribe's agent may call (agents/mcp.ts). */
  mcpServersOf?: (scribeId: string) => Promise<McpServerRow[]>;
  /** Work this process gave back unfinished as it stopped: another process may take it at once. */
  onHandedBack?: (id: string) => void;
  /** An answer under way was stored anew (its whole text so far): for readers that follow it. */
  onDraftSaved?: (work: { kind: Work['kind']; id: string }, text: string) => void;
  options?: RuntimeOptions;
}) {
  const inFlight = new Set<Promise<void>>();
  const abort = new AbortController();
  /** Stopping: no more claims, while running work may still finish (`stop`'s drain). */
  let closing = false;
  /** Each running piece of work's own abort, by its id: a cancel stops that one alone. */
  const runs = new Map<string, { kind: Work['kind']; cancel: AbortController; capped?: boolean }>();
  const cancelWatch = watchForCancels();
  let claiming: Promise<unknown> = Promise.resolve();
  let lastTickAt: Date | null = null;
  const finished: RuntimeTickResult = { sessions: 0, tasks: 0 };
  /**
   * Counts the looks anew for work (a nudge, the once-a-second tick). A claim that found
   * nothing records the look it started in (`foundEmptyIn`), and a finished piece of work
   * refills its slot only if a look came since, so that an idle runtime does not ask again
   * after each run; a claim that started before a look does not mark that look as empty.
   */
  let looks = 0;
  let foundEmptyIn = -1;

  /**
   * Claims due work into the free slots (queries.ts, "Slots and turns"): each claim shares
   * them among the scribes whose turn it is, and claims follow while they find work or pass
   * turns on, until the slots are full or nothing is due.
   */
  async function claimWork(): Promise<Work[]> {
    lastTickAt = clock();
    const work: Work[] = [];
    while (!closing && foundEmptyIn !== looks) {
      const slots = options.concurrency - inFlight.size - work.length;
      if (slots <= 0) break;
      const look = looks;
      const now = clock();
      const terms = { token: randomUUID(), now: now.toISOString(), leaseUntil: new Date(now.getTime() + options.leaseMs).toISOString(), slots };
      const claimed = await queries.claimRuns(db, terms, (turns) => shareOut(slots, turns));
      work.push(...claimed.runs);
      if (claimed.runs.length > 0 || claimed.passed > 0) continue;
      // Nothing due, unless a scribe another claim held has work: that claim's runtime takes it.
      if (claimed.skipped === 0 && look === looks) foundEmptyIn = look;
      break;
    }
    return work;
  }

  /** The free slots shared among the scribes whose turn it is: as many each, within what each may still start. */
  function shareOut(free: number, turns: readonly queries.Turn[]): Array<[scribeId: string, count: number]> {
    const each = Math.max(1, Math.floor(free / Math.max(1, turns.length)));
    const shares: Array<[scribeId: string, count: number]> = [];
    let left = free;
    for (const turn of turns) {
      const share = Math.min(each, left, turn.room);
      if (share <= 0) break;
      shares.push([turn.id, share]);
      left -= share;
    }
    return shares;
  }

  function start(work: Work): Promise<void> {
    const cancel = new AbortController();
    runs.set(work.row.id, { kind: work.kind, cancel });
    cancelWatch.started();
    const claim = { id: work.row.id, token: work.row.claim_token! };
    const table = work.kind === 'session' ? 'sessions' : 'tasks';
    const lease = keepLeases(() => queries.renewWorkLease(db, table, claim, new Date(clock().getTime() + options.leaseMs).toISOString()), options.renewMs);
    const running = (work.kind === 'session' ? answerSession(work.row, cancel.signal) : workTask(work.row, cancel.signal))
      .catch((err) => logger.error({ err, [work.kind]: work.row.id }, 'agent runtime could not record its work'))
      .finally(() => {
        lease.stop();
        const capped = runs.get(work.row.id)?.capped;
        runs.delete(work.row.id);
        finished[table]++;
        inFlight.delete(running);
        // A slot is free: take the next piece of work without waiting for the cron tick. A
        // capped scribe's turn came back with it (scribes/queries.ts, `runEnded`): look anew.
        if (capped) fill();
        else refill();
      });
    inFlight.add(running);
    return running;
  }

  /** A claim waiting behind the running one: later calls join it rather than queue more (it fills every free slot). */
  let queued: Promise<Array<Promise<void>>> | undefined;

  /** Claims and starts work; resolves, once claimed, with what it started. Never throws. */
  function claimAndStart(): Promise<Array<Promise<void>>> {
    if (queued) return queued;
    const started = claiming.then(async () => {
      queued = undefined;
      try {
        return (await claimWork()).map(start);
      } catch (err) {
        logger.error({ err }, 'agent runtime could not claim work');
        return [];
      }
    });
    queued = started;
    claiming = started;
    return started;
  }

  /**
   * Runs one claimed piece of work: gives up once it has been claimed more than
   * `maxAttempts` times; if the agent fails, records that with `fail`, or hands the work
   * back at once when the runtime is stopping (the abort is why it failed).
   */
  async function runClaimed(
    claim: { table: 'sessions' | 'tasks'; id: string; token: string; attempts: number },
    cancelled: AbortSignal,
    fail: (reason: string) => Promise<unknown>,
    work: () => Promise<void>,
    failure: { log: Record<string, string>; message: string },
  ): Promise<void> {
    if (claim.attempts > options.maxAttempts) {
      await fail(messages.gaveUp(options.maxAttempts));
      return;
    }
    const handBack = async () => {
      await queries.releaseClaim(db, claim.table, claim, clock().toISOString());
      onHandedBack(claim.id);
    };
    try {
      // Stopped between the claim and the agent call: hand the work back untouched.
      if (abort.signal.aborted) return await handBack();
      await work();
    } catch (err) {
      if (abort.signal.aborted) return await handBack();
      // Cancelled: the cancel took the claim, so there is nothing to record or release.
      if (cancelled.aborted) return;
      logger.warn({ err, ...failure.log }, failure.message);
      await fail(reasonOf(err));
    }
  }

  /** The scribe of a piece of work, noting whether its runs are capped. */
  async function scribeOf(row: { id: string; scribe_id: string }): Promise<ScribeRow | undefined> {
    const scribe = await findScribe(row.scribe_id);
    const run = runs.get(row.id);
    if (run) run.capped = scribe?.max_concurrency != null;
    return scribe;
  }

  async function answerSession(session: SessionRow, cancelled: AbortSignal): Promise<void> {
    const claim = { table: 'sessions' as const, id: session.id, token: session.claim_token!, attempts: session.attempts };
    const scribe = await scribeOf(session);
    const at = () => laterThan(clock, session.updated_at);
    // The answer's webhook event, with the scribe's reply; none while a newer message is still owed an answer (queued).
    const event = (reply: string | null) => async (trx: Db, state: 'waiting' | 'completed' | 'failed' | 'queued') => {
      if (state !== 'queued') await recordEvents(trx, [sessionEvent(session, scribe?.slug ?? '', state, reply)]);
    };
    const fail = (reason: string) =>
      finishSession(db, claim, { author: 'system', text: messages.sessionFailed(reason), end: false, errorMessage: reason }, at(), event(null));
    if (!scribe) return;
    const signal = AbortSignal.any([abort.signal, cancelled]);
    await runClaimed(claim, cancelled, fail, async () => {
      const transcript = (await findMessages(db, session.id)).filter((m) => !m.partial);
      const trace = silencedBy(signal, traceFor({ organizationId: scribe.organization_id, scribeId: scribe.id, sessionId: session.id }));
      const outcome = await writing({ kind: 'session', id: session.id }, (text) => saveDraftMessage(db, claim, text, at()), (draft) =>
        agentFor(scribe.agent).answer({ scribe, transcript, tools: toolboxFor(scribe), trace, mcpServers: () => mcpServersOf(scribe.id), signal, draft }),
      );
      const answeredUpTo = transcript.length ? Number(transcript.at(-1)!.id) : undefined;
      await finishSession(db, claim, { author: 'scribe', text: outcome.reply, end: outcome.end ?? false, errorMessage: null, answeredUpTo }, at(), event(outcome.reply));
    }, { log: { session: session.id }, message: 'agent failed to answer a session' });
  }

  async function workTask(task: WorkedTaskRow, cancelled: AbortSignal): Promise<void> {
    const claim = { table: 'tasks' as const, id: task.id, token: task.claim_token!, attempts: task.attempts };
    const scribe = await scribeOf(task);
    /** Moves the task out of in_progress, releasing the claim, if the claim is still ours. */
    const finish = (to: 'done' | 'waiting', author: 'scribe' | 'system', text: string, columns: Pick<WorkedTaskRow, 'last_error'> & Partial<Pick<WorkedTaskRow, 'result'>>) =>
      moveTask(
        db,
        { id: task.id, from: 'in_progress', to, author, text, at: laterThan(clock, task.updated_at), claimToken: claim.token },
        { claim_token: null, lease_until: null, attempts: 0, ...columns },
        (trx) => recordEvents(trx, [taskEvent(task, scribe?.slug ?? '', to === 'done' ? { status: 'done', result: text } : { status: 'waiting', question: text })]),
      );
    const fail = (reason: string) => finish('waiting', 'system', messages.taskFailed(reason), { last_error: reason });
    if (!scribe) return;
    const signal = AbortSignal.any([abort.signal, cancelled]);
    await runClaimed(claim, cancelled, fail, async () => {
      const history = (await findTaskEvents(db, task.id)).filter((e) => !e.partial);
      const trace = silencedBy(signal, traceFor({ organizationId: scribe.organization_id, scribeId: scribe.id, taskId: task.id }));
      const attachments = await attachmentsOf(task);
      const draftedAt = () => laterThan(clock, task.updated_at);
      const outcome = await writing({ kind: 'task', id: task.id }, (text) => saveDraftEvent(db, claim, text, draftedAt()), (draft) =>
        agentFor(scribe.agent).work({ scribe, task, history, attachments, tools: toolboxFor(scribe), trace, mcpServers: () => mcpServersOf(scribe.id), signal, draft }),
      );
      if (outcome.status === 'done') await finish('done', 'scribe', outcome.result, { result: outcome.result, last_error: null });
      else await finish('waiting', 'scribe', outcome.question, { last_error: null });
    }, { log: { task: task.id }, message: 'agent failed to work a task' });
  }

  /**
   * Runs the agent with a writer that stores its answer while the model writes it (`save`,
   * guarded by the run's claim), and stops that writer before the answer is recorded, or the
   * run's failure, cancel or hand-back removes what it wrote.
   */
  async function writing<T>(work: { kind: Work['kind']; id: string }, save: (text: string) => Promise<boolean>, run: (draft: ReplyWriter) => Promise<T>): Promise<T> {
    const draft = createReplyWriter({
      save,
      onSaved: (text) => onDraftSaved(work, text),
      onError: (err) => logger.warn({ err, [work.kind]: work.id }, 'could not store an answer under way'),
    });
    try {
      return await run(draft);
    } finally {
      await draft.close();
    }
  }

  /** Stops the run of `id` if it runs in this process: its agent's calls are aborted and it records nothing more. */
  function cancel(id: string): void {
    runs.get(id)?.cancel.abort(new Error('cancelled'));
  }

  /**
   * While work runs, looks every `cancelCheckMs` for any of it cancelled from another process
   * (PostgreSQL's NOTIFY says so at once; SQLite's processes, and a lost notification, rely
   * on this): one query a kind of work, by primary key, for the ids running here.
   */
  function watchForCancels() {
    let timer: NodeJS.Timeout | undefined;
    const check = async () => {
      timer = undefined;
      if (runs.size === 0 || abort.signal.aborted) return;
      const ids = { sessions: [] as string[], tasks: [] as string[] };
      for (const [id, run] of runs) (run.kind === 'session' ? ids.sessions : ids.tasks).push(id);
      try {
        for (const id of await queries.findCancelled(db, ids)) cancel(id);
      } catch (err) {
        logger.warn({ err }, 'could not look for cancelled work');
      }
      started();
    };
    const started = () => {
      if (!timer && runs.size > 0 && !abort.signal.aborted) timer = setTimeout(() => void check(), options.cancelCheckMs).unref();
    };
    return { started, stop: () => clearTimeout(timer) };
  }

  /** Resolves once no claim is queued (claims queue behind each other in `claiming`). */
  async function claimsSettled(): Promise<void> {
    for (let last = claiming; ; last = claiming) {
      await last;
      if (last === claiming) return;
    }
  }

  function refill(): void {
    if (!closing) void claimAndStart();
  }

  /** Looks for work anew: new work arrived, or the once-a-second tick. */
  function fill(): void {
    looks++;
    refill();
  }

  return {
    /** Works everything due, slot by slot, and resolves with what was finished meanwhile (tests drive the runtime with it). */
    async tick(): Promise<RuntimeTickResult> {
      const before = { ...finished };
      looks++;
      for (;;) {
        await claimAndStart();
        // Work that finished meanwhile queued claims of its own (fill): let them start theirs first.
        await claimsSettled();
        if (inFlight.size === 0) break;
        await Promise.race([...inFlight]);
      }
      return { sessions: finished.sessions - before.sessions, tasks: finished.tasks - before.tasks };
    },
    /** Claims and starts due work without waiting for it (the cron job, and a nudge on new work). */
    fill,
    nudge: fill,
    /** When the runtime last looked for work (health pages). */
    get lastTickAt(): Date | null {
      return lastTickAt;
    },
    get running(): number {
      return inFlight.size;
    },
    cancel,
    /**
     * Stops claiming at once; lets running work finish for up to `drainMs`, then aborts its
     * agent calls and hands it back (claim cleared, `onHandedBack`), and waits for all of it.
     */
    async stop({ drainMs = 0 }: { drainMs?: number } = {}): Promise<void> {
      closing = true;
      await claiming;
      if (drainMs > 0 && inFlight.size > 0) await settledWithin([...inFlight], drainMs);
      abort.abort();
      cancelWatch.stop();
      await Promise.all([...inFlight]);
    },
  };
}

/** A trace that records nothing once `signal` aborted: work cancelled or handed back leaves no trace of its last, aborted call. */
function silencedBy(signal: AbortSignal, trace: Trace): Trace {
  return { record: async (call) => (signal.aborted ? undefined : trace.record(call)) };
}

function reasonOf(err: unknown): string {
  return err instanceof Error && err.message ? err.message : 'unknown error';
}
