import type { Clock } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import type * as queries from './queries.js';
import { TOOL_NAMES, type Toolbox } from './toolbox.js';
import { cutNoted, cutText } from '../lib/text.js';

/** How much of a tool call's arguments and result a trace keeps. */
export const TRACE_KEEP_CHARS = 4000;

/** One model or tool call, as an agent reports it. */
export interface TracedCall {
  kind: 'model' | 'tool';
  /** The model's name, or the tool's as the model saw it. */
  name: string;
  arguments?: unknown;
  result?: unknown;
  durationMs: number;
  error?: string | null;
  /** A model call's usage, as its response reported it. */
  inputTokens?: number | null;
  outputTokens?: number | null;
}

/**
 * Where an agent reports its calls. Each is stored as it happens, so a failed run keeps what it
 * did, but the run does not wait for it: its write is queued (positions keep the order) and
 * `stored()` waits for every write queued so far. A call that cannot be stored is reported to
 * the trace's `onError`; it does not fail the work it describes.
 */
export interface Trace {
  record(call: TracedCall): void;
  stored(): Promise<void>;
}

export const noTrace: Trace = { record: () => {}, stored: async () => {} };

/** A value as the trace keeps it: text, cut to TRACE_KEEP_CHARS with a note of the full length. */
export function keep(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return cutNoted(text, TRACE_KEEP_CHARS);
}

/** Where the traces of a process store their calls: the runtime's line of runs' writes (runtime/run-writes.ts). */
export type CallStore = (row: queries.NewAgentCall) => Promise<void>;

/** The trace of one run of the agent on one task or one session answer; each call is stored through `store`. */
export function createTrace(
  store: CallStore,
  clock: Clock,
  work: { organizationId: string; scribeId: string; taskId?: string; sessionId?: string },
  onError: (err: unknown) => void,
): Trace {
  const runId = newId();
  let position = 0;
  const pending: Array<Promise<unknown>> = [];
  return {
    record(call) {
      const row = {
        organization_id: work.organizationId,
        scribe_id: work.scribeId,
        task_id: work.taskId ?? null,
        session_id: work.sessionId ?? null,
        run_id: runId,
        position: position++,
        kind: call.kind,
        name: cutText(call.name, 200),
        arguments: keep(call.arguments),
        result: keep(call.result),
        duration_ms: Math.round(call.durationMs),
        error: call.error ?? null,
        input_tokens: call.inputTokens ?? null,
        output_tokens: call.outputTokens ?? null,
        created_at: clock().toISOString(),
      };
      pending.push(store(row).catch(onError));
    },
    async stored() {
      await Promise.all(pending);
    },
  };
}

/** The toolbox, each action reported to `trace` as a tool call (the builtin agent, which calls it directly). */
export function tracedToolbox(tools: Toolbox, trace: Trace): Toolbox {
  const traced = {} as Record<keyof Toolbox, (...args: never[]) => Promise<unknown>>;
  for (const action of Object.keys(TOOL_NAMES) as Array<keyof Toolbox>) {
    traced[action] = async (...args: never[]) => {
      // The builtin agent's work is all this process's CPU and database, with no model to wait
      // for: each call lets waiting I/O (the API's requests) in first, as a model's answer would.
      await new Promise((resolve) => setImmediate(resolve));
      const started = performance.now();
      const argumentsGiven = args.length === 0 ? {} : args[0];
      try {
        const result = await (tools[action] as (...a: never[]) => Promise<unknown>)(...args);
        trace.record({ kind: 'tool', name: TOOL_NAMES[action], arguments: argumentsGiven, result, durationMs: performance.now() - started });
        return result;
      } catch (err) {
        trace.record({ kind: 'tool', name: TOOL_NAMES[action], arguments: argumentsGiven, durationMs: performance.now() - started, error: (err as Error).message });
        throw err;
      }
    };
  }
  return traced as unknown as Toolbox;
}

/** A stored trace's totals: tokens (the `usage` the CLI prints), calls and errors. */
export function traceTotals(calls: readonly queries.AgentCallRow[]) {
  return {
    usage: { input_tokens: sum(calls, (c) => c.input_tokens ?? 0), output_tokens: sum(calls, (c) => c.output_tokens ?? 0) },
    modelCalls: calls.filter((c) => c.kind === 'model').length,
    toolCalls: calls.filter((c) => c.kind === 'tool').length,
    errors: calls.filter((c) => c.error !== null).length,
    durationMs: sum(calls, (c) => c.duration_ms),
  };
}

/** A trace as the CLI prints it (docs/agents.md, Traces): tool items add their arguments and result. */
export function presentTrace(calls: readonly queries.AgentCallRow[]) {
  return calls.map((c) =>
    c.kind === 'model'
      ? { kind: c.kind, name: c.name, duration_ms: c.duration_ms, error: c.error, input_tokens: c.input_tokens, output_tokens: c.output_tokens }
      : { kind: c.kind, name: c.name, duration_ms: c.duration_ms, error: c.error, arguments: c.arguments, result: c.result },
  );
}

const sum = <T>(items: readonly T[], of: (item: T) => number) => items.reduce((total, item) => total + of(item), 0);
