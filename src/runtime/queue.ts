import type { Db } from '../db/knex.js';
import type { Wakeups } from '../db/wakeups.js';
import type { Logger } from '../logger.js';
import { type Clock, laterThan } from '../lib/clock.js';
import type { Agent } from '../agents/agent.js';
import type { Toolbox } from '../agents/toolbox.js';
import { type CallStore, noTrace, type Trace } from '../agents/trace.js';
import type { AgentAttachment } from '../agents/attachments.js';
import type { McpServerRow } from '../agents/queries.js';
import type { AgentKind, ScribeRow } from '../scribes/service.js';
import { findMessagesOfSessions, type MessageRow, saveDraftMessage } from '../sessions/queries.js';
import { findEventsOfTasks, saveDraftEvent, type TaskEventRow, type WorkedTaskRow } from '../tasks/queries.js';
import { createReplyWriter, type ReplyWriter } from '../agents/reply-writer.js';
import { sessionEvent, taskEvent, type RecordEvents } from '../webhooks/events.js';
import type { Writes } from '../db/group-commit.js';
import { shareSlots, workQueue, type ClaimRef, type Claimed, type ClaimTerms, type Queue, type RunContext } from '../work/engine.js';
import * as queries from './queries.js';
import { runWrites } from './run-writes.js';
import { dialectOf } from '../db/dialect.js';

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
  /** The least time between two claims: runs that end meanwhile free slots that one claim fills. */
  claimGapMs: number;
  /**
   * The least time between two batches of runs' writes (run-writes.ts), and on SQLite between
   * two of their commits (db/group-commit.ts): writes that come meanwhile share the next. Never
   * more than a tenth of what a run typically takes (COMMIT_GAP_SHARE_OF_RUN).
   */
  commitGapMs: number;
  /** How fast the runs in flight may grow from idle: at most this many more a second (runs that end are replaced at once all the same). */
  growthPerSecond: number;
  /** Batches of runs' writes under way at once where they share commits (SQLite): they join one group rather than wait for each other's commits (run-writes.ts). */
  writeLines: number;
  /**
   * From how long runs typically take the reserve of slots for scribes with nothing in flight
   * is kept (RESERVED_SHARE). A first run waits for a slot at most about as long as a run
   * takes; below this that wait is short enough, and the reserve would cost throughput for nothing.
   */
  reserveForRunsOfMs: number;
}

/**
 * The commit gap's most, as a share of what a run typically takes: twice the claim gap's
 * (the engine's GAP_SHARE_OF_RUN), since a run waiting for it holds no slot, only the moment
 * its record can be read; each batch it gathers writes fewer pages a run (SQLite) and fewer
 * statements a run (both).
 */
const COMMIT_GAP_SHARE_OF_RUN = 1 / 10;

export const defaultRuntimeOptions: RuntimeOptions = {
  concurrency: 100,
  leaseMs: 30_000,
  renewMs: 10_000,
  maxAttempts: 3,
  cancelCheckMs: 1_000,
  // Small beside a model call's seconds, and enough that a busy process claims runs by the dozen.
  claimGapMs: 40,
  // Runs give their slot back before their record is written (the engine's `released`), so
  // this wait delays only when a record can be read, and lets those of runs ending meanwhile share a commit.
  commitGapMs: 100,
  // About what one process starts and finishes in a second at a millisecond of CPU a run.
  growthPerSecond: 1000,
  writeLines: 16,
  reserveForRunsOfMs: 2_000,
};

/**
 * Of a process's slots, the share that scribes with runs in flight leave free while runs
 * take long (`reserveForRunsOfMs`): under a backlog that holds every slot (runs started
 * together end together), a scribe with nothing in flight then still starts its first run
 * at the next claim, rather than when a run of the backlog ends. None below a hundred slots.
 */
const RESERVED_SHARE = 1 / 100;

export const messages = {
  sessionFailed: (reason: string) => `The scribe could not answer: ${reason}`,
  taskFailed: (reason: string) => `The scribe could not finish this task: ${reason}. Give input to try again.`,
  gaveUp: (attempts: number) => `gave up after ${attempts} attempts`,
};

/**
 * A claimed run with what it reads first, read with its claim: its scribe, the scribe's MCP
 * servers, and a session's transcript or a task's history and files.
 */
type Work = queries.Run & {
  id: string;
  scribe: ScribeRow | undefined;
  mcpServers: readonly McpServerRow[];
  transcript: readonly MessageRow[];
  history: readonly TaskEventRow[];
  attachments: readonly AgentAttachment[];
  /** An answer under way may be stored: one was at the claim, or this run saved one since. Its finish looks for it only then. */
  drafted: boolean;
};

/** What `tick()` counts: runs that ended, by kind of work. */
type Outcome = 'sessions' | 'tasks';

export type AgentRuntime = ReturnType<typeof createAgentRuntime>;

/**
 * The agent runs' queue: chat sessions owed an answer and open tasks of active scribes,
 * worked up to `concurrency` at once. A claim fills the free slots, shared among scribes in
 * turn and within each scribe's cap across processes (queries.ts, "Slots and turns"). A run
 * that gets through a model's answer records it; one that fails records why (a session
 * `failed`, a task `waiting` for input), as does work claimed more than `maxAttempts` times
 * (each crash of a worker costs one). Work handed back at a stop loses what it had written of
 * its answer, and another process takes it at once; a cancelled run records nothing (the
 * cancel took its claim). Finishing is guarded by the claim token, so work taken over is
 * never recorded twice.
 */
export function createAgentRuntime({
  db,
  claimsDb = db,
  clock,
  logger,
  wakeups,
  agentFor,
  findScribes,
  toolboxFor,
  recordEvents = async () => [],
  traceFor = () => noTrace,
  attachmentsOf = async () => new Map(),
  mcpServersOf = async () => new Map(),
  onDraftSaved = () => {},
  writes = (work) => work(db),
  options = defaultRuntimeOptions,
}: {
  db: Db;
  /** Where claims are made, and what a claim's runs read first (db/knex.ts, `claimConnections`); `db` unless given. */
  claimsDb?: Db;
  clock: Clock;
  logger: Logger;
  /** Where other processes are told of work handed back as this one stops: they take it at once. */
  wakeups?: Wakeups;
  agentFor: (kind: AgentKind) => Agent;
  findScribes: (ids: readonly string[]) => Promise<ScribeRow[]>;
  toolboxFor: (scribe: ScribeRow) => Toolbox;
  /** Writes a finished answer's or task's webhook event in the transaction that records it (the outbox). */
  recordEvents?: RecordEvents;
  /** Where a run of the agent on a task or a session answer reports its calls (agents/trace.ts). */
  traceFor?: (work: { organizationId: string; scribeId: string; taskId?: string; sessionId?: string }, store: CallStore) => Trace;
  /** The stored files of the receipt a task came from (agents/attachments.ts). */
  attachmentsOf?: (tasks: readonly WorkedTaskRow[]) => Promise<ReadonlyMap<string, AgentAttachment[]>>;
  /** The MCP servers whose tools each scribe's agent may call (agents/mcp.ts). */
  mcpServersOf?: (scribeIds: readonly string[]) => Promise<ReadonlyMap<string, readonly McpServerRow[]>>;
  /** An answer under way was stored anew (its whole text so far): for readers that follow it. */
  onDraftSaved?: (work: { kind: Work['kind']; id: string }, text: string) => void;
  /** How a run's writes (its drafts and its finish) reach the database: each on its own, or sharing commits with other runs' (db/group-commit.ts). */
  writes?: Writes;
  options?: RuntimeOptions;
}) {
  const tableOf = (work: Work): Outcome => (work.kind === 'session' ? 'sessions' : 'tasks');

  /**
   * One claim into the free slots (queries.ts, "Slots and turns"). A claim that only passed
   * turns on (their scribes had nothing due) is followed by another at once. One that found
   * nothing while another claim held a scribe whose turn had come proves nothing: that
   * claim's process takes the scribe's work, and this one may find more after it.
   */
  async function claim({ token, now, leaseUntil, limit, open, refillOnly }: ClaimTerms): Promise<Claimed<Work>> {
    for (;;) {
      let kept = 0;
      const claimed = await queries.claimRuns(claimsDb, { token, now: now.toISOString(), leaseUntil, slots: limit, lapsed: !refillOnly }, (turns) => {
        const shared = shareOut(limit, open, turns);
        kept = shared.kept;
        return shared.shares;
      });
      if (claimed.runs.length === 0 && claimed.passed > 0) continue;
      // A scribe given its whole share may have more due, as may one held back for the reserve: a next claim shares out what is left.
      return { items: await withScribes(claimed.runs), inconclusive: claimed.skipped > 0 || claimed.more > 0 || kept > 0, kept };
    }
  }

  /** The claimed runs with what they read first (`Work`): a few statements for the claim rather than a few a run. */
  async function withScribes(runs: readonly queries.Run[]): Promise<Work[]> {
    if (runs.length === 0) return [];
    const ids = [...new Set(runs.map((run) => run.row.scribe_id))];
    const sessions = runs.flatMap((run) => (run.kind === 'session' ? [run.row.id] : []));
    const tasks = runs.flatMap((run) => (run.kind === 'task' ? [run.row] : []));
    const [scribes, servers, transcripts, histories, files] = await Promise.all([
      findScribes(ids),
      mcpServersOf(ids),
      findMessagesOfSessions(claimsDb, sessions),
      findEventsOfTasks(
        claimsDb,
        tasks.map((task) => task.id),
      ),
      attachmentsOf(tasks),
    ]);
    const byId = new Map(scribes.map((scribe) => [scribe.id, scribe]));
    return runs.map((run) => {
      const transcript = transcripts.get(run.row.id) ?? [];
      const history = histories.get(run.row.id) ?? [];
      return {
        id: run.row.id,
        ...run,
        scribe: byId.get(run.row.scribe_id),
        mcpServers: servers.get(run.row.scribe_id) ?? [],
        // What the scribe was writing when a run before this one stopped is not part of it.
        transcript: transcript.filter((m) => !m.partial),
        history: history.filter((e) => !e.partial),
        attachments: files.get(run.row.id) ?? [],
        drafted: transcript.some((m) => m.partial) || history.some((e) => e.partial),
      };
    });
  }

  const reserved = Math.floor(options.concurrency * RESERVED_SHARE);

  /**
   * `limit` slots shared among the scribes whose turn it is: first one each to those with
   * nothing in flight, then as many each as there are to the rest, within what each may
   * still start, who leave `reserved` of the process's `open` slots free for the next
   * scribe with nothing in flight while runs take long. One run is enough to put a scribe
   * among the rest (it keeps its turn, and the claim that follows gives it its share); a
   * larger first share would hold slots out of this claim that the scribe may not use.
   * `kept`: the slots held back for the reserve.
   */
  function shareOut(limit: number, open: number, turns: readonly queries.Turn[]) {
    const idle = turns.filter((turn) => turn.runs_in_flight === 0).slice(0, limit);
    const left = limit - idle.length;
    const reserving = (worker.typicalRunMs ?? 0) >= options.reserveForRunsOfMs;
    const kept = reserving ? Math.min(left, Math.max(0, reserved - (open - limit))) : 0;
    const busy = turns.filter((turn) => turn.runs_in_flight > 0);
    const shares = [...idle.map((turn) => [turn, 1] as const), ...shareSlots(left - kept, busy, (turn) => turn.room)].map(([turn, n]) => [turn.id, n] as [string, number]);
    return { shares, kept: busy.length > 0 ? kept : 0 };
  }

  /** What records a session's answer or its failure, with the answer's webhook event, if the claim is still ours. */
  function sessionAnswers(work: Work & { kind: 'session' }, claim: ClaimRef, scribe: ScribeRow | undefined) {
    const session = work.row;
    const at = () => laterThan(clock, session.updated_at);
    // The answer's webhook event, with the scribe's reply; none while a newer message is still owed an answer (queued).
    const event = (reply: string | null) => async (trx: Db, state: 'waiting' | 'completed' | 'failed' | 'queued') => {
      if (state !== 'queued') await recordEvents(trx, [sessionEvent(session, scribe?.slug ?? '', state, reply)]);
    };
    // On the runs' line of batches (run-writes.ts), after the calls of the run's trace.
    return {
      at,
      answer: (reply: string, end: boolean, answeredUpTo: number | undefined) =>
        line.answer({ claim, outcome: { author: 'scribe', text: reply, end, errorMessage: null, answeredUpTo, noDraft: !work.drafted }, at: at(), alongside: event(reply) }),
      fail: (reason: string) =>
        line.answer({
          claim,
          outcome: { author: 'system', text: messages.sessionFailed(reason), end: false, errorMessage: reason, noDraft: !work.drafted },
          at: at(),
          alongside: event(null),
        }),
    };
  }

  // Runs' trace calls, task runs' ends and session answers (run-writes.ts): batches not full
  // start no more often than the commit gap; on SQLite several join a group commit, on
  // PostgreSQL one at a time keeps a run's calls ahead of its end. A lone run's writes wait for no one.
  const sharesCommits = dialectOf(db).sharesCommits;
  /** The wait before the next batch of runs' writes, or commit of them: none while only one run is in flight. */
  const commitGapMs = () => (worker.running > 1 ? worker.gapWithin(options.commitGapMs, COMMIT_GAP_SHARE_OF_RUN) : 0);
  const line = runWrites(writes, recordEvents, { lines: sharesCommits ? options.writeLines : 1, gapMs: commitGapMs });

  /** What moves a task out of in_progress (releasing the claim), or fails it, with its webhook event, if the claim is still ours. */
  function taskMoves(work: Work & { kind: 'task' }, claim: ClaimRef, scribe: ScribeRow | undefined) {
    const task = work.row;
    const finish = (to: 'done' | 'waiting', author: 'scribe' | 'system', text: string, { result, lastError }: { result?: string; lastError: string | null }) =>
      line.end({
        finish: { id: task.id, claimToken: claim.token, to, author, text, at: laterThan(clock, task.updated_at), result, lastError, noDraft: !work.drafted },
        event: taskEvent(task, scribe?.slug ?? '', to === 'done' ? { status: 'done', result: text } : { status: 'waiting', question: text }),
      });
    return { finish, fail: (reason: string) => finish('waiting', 'system', messages.taskFailed(reason), { lastError: reason }) };
  }

  /** Records why a run failed: a session answered with the failure, a task left waiting for input. */
  function fail(work: Work, claim: ClaimRef, scribe: ScribeRow | undefined, reason: string): Promise<unknown> {
    return work.kind === 'session' ? sessionAnswers(work, claim, scribe).fail(reason) : taskMoves(work, claim, scribe).fail(reason);
  }

  async function answerSession(work: Work & { kind: 'session' }, claim: ClaimRef, scribe: ScribeRow, { signal, released }: RunContext): Promise<void> {
    const { row: session, transcript, mcpServers } = work;
    const answers = sessionAnswers(work, claim, scribe);
    const trace = silencedBy(signal, traceFor({ organizationId: scribe.organization_id, scribeId: scribe.id, sessionId: session.id }, line.call));
    const outcome = await writing(
      work,
      (text) => writes((trx) => saveDraftMessage(trx, claim, text, answers.at())),
      (draft) => agentFor(scribe.agent).answer({ scribe, transcript, tools: toolboxFor(scribe), trace, mcpServers: async () => mcpServers, signal, draft }),
    );
    released();
    // The run's calls are queued ahead of its answer, on the same line (run-writes.ts).
    await answers.answer(outcome.reply, outcome.end ?? false, transcript.length ? Number(transcript.at(-1)!.id) : undefined);
  }

  async function workTask(work: Work & { kind: 'task' }, claim: ClaimRef, scribe: ScribeRow, { signal, released }: RunContext): Promise<void> {
    const { row: task, history, attachments, mcpServers } = work;
    const { finish } = taskMoves(work, claim, scribe);
    const trace = silencedBy(signal, traceFor({ organizationId: scribe.organization_id, scribeId: scribe.id, taskId: task.id }, line.call));
    const draftedAt = () => laterThan(clock, task.updated_at);
    const outcome = await writing(
      work,
      (text) => writes((trx) => saveDraftEvent(trx, claim, text, draftedAt())),
      (draft) => agentFor(scribe.agent).work({ scribe, task, history, attachments, tools: toolboxFor(scribe), trace, mcpServers: async () => mcpServers, signal, draft }),
    );
    released();
    // The run's calls are queued ahead of its end, on the same line (run-writes.ts).
    await (outcome.status === 'done'
      ? finish('done', 'scribe', outcome.result, { result: outcome.result, lastError: null })
      : finish('waiting', 'scribe', outcome.question, { lastError: null }));
  }

  /**
   * Runs the agent with a writer that stores its answer while the model writes it (`save`,
   * guarded by the run's claim), and stops that writer before the answer is recorded, or the
   * run's failure, cancel or hand-back removes what it wrote.
   */
  async function writing<T>(work: Work, save: (text: string) => Promise<boolean>, run: (draft: ReplyWriter) => Promise<T>): Promise<T> {
    const draft = createReplyWriter({
      save: (text) => {
        work.drafted = true;
        return save(text);
      },
      onSaved: (text) => onDraftSaved({ kind: work.kind, id: work.id }, text),
      onError: (err) => logger.warn({ err, [work.kind]: work.id }, 'could not store an answer under way'),
    });
    try {
      return await run(draft);
    } finally {
      await draft.close();
    }
  }

  const queue: Queue<Work, Outcome> = {
    name: 'agent runs',
    channel: 'scribe_work',
    options: {
      slots: options.concurrency,
      leaseMs: options.leaseMs,
      renewMs: options.renewMs,
      cancelCheckMs: options.cancelCheckMs,
      claimGapMs: options.claimGapMs,
      growthPerSecond: options.growthPerSecond,
    },
    outcomes: ['sessions', 'tasks'],
    claim,
    async run(work, context) {
      const { token, lookAnewAfter } = context;
      const claimRef = { id: work.id, token };
      const { scribe } = work;
      if (!scribe) return tableOf(work);
      // A capped scribe's turn comes back as its run ends (scribes/queries.ts, `runEnded`): the next claim looks for it.
      if (scribe.max_concurrency !== null) lookAnewAfter();
      if (work.row.attempts > options.maxAttempts) await fail(work, claimRef, scribe, messages.gaveUp(options.maxAttempts));
      else if (work.kind === 'session') await answerSession(work, claimRef, scribe, context);
      else await workTask(work, claimRef, scribe, context);
      return tableOf(work);
    },
    renew: ({ token, items }, leaseUntil) => Promise.all(items.map((work) => queries.renewWorkLease(db, tableOf(work), { id: work.id, token }, leaseUntil))),
    // The agent failed: recorded at once, not retried (input to a task, or a new message, tries again).
    async giveUp(claimRef, work, err) {
      await fail(work, claimRef, work.scribe, reasonOf(err));
      return tableOf(work);
    },
    // Clears the claim and what the run had written of its answer; the engine tells the other processes.
    handBack: (claimRef, work) => queries.releaseClaim(db, tableOf(work), claimRef, clock().toISOString()),
    attemptsOf: (work) => work.row.attempts,
    cancelled: (running) =>
      queries.findCancelled(db, {
        sessions: running.filter((work) => work.kind === 'session').map((work) => work.id),
        tasks: running.filter((work) => work.kind === 'task').map((work) => work.id),
      }),
    // What claims read: the queues, and the scribes' turns.
    tidy: () => dialectOf(db).tidyAfterDrain(db, ['tasks', 'sessions', 'scribes']),
  };
  const worker = workQueue(queue, { clock, logger, wakeups });
  // The group commit that the runs' writes go through (services.ts) waits the same gap.
  return Object.assign(worker, { commitGapMs });
}

/** A trace that records nothing once `signal` aborted: work cancelled or handed back leaves no trace of its last, aborted call. */
function silencedBy(signal: AbortSignal, trace: Trace): Trace {
  return { record: (call) => (signal.aborted ? undefined : trace.record(call)), stored: () => trace.stored() };
}

function reasonOf(err: unknown): string {
  return err instanceof Error && err.message ? err.message : 'unknown error';
}
