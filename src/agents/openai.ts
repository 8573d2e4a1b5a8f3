import type OpenAI from 'openai';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { OpenAiConfig } from '../config.js';
import type { Logger } from '../logger.js';
import { HttpError } from '../http/errors.js';
import { AgentError, type Agent, type AgentInput, type SessionOutcome, type TaskOutcome } from './agent.js';
import { TOOL_NAMES, type Toolbox } from './toolbox.js';
import { attachmentParts } from './attachments.js';
import { messages as mcpMessages, type McpConnector, type McpTool, type McpToolset } from './mcp.js';
import { networkFailure } from '../net/guarded-agent.js';
import type { FetchAnswer, ModelFetch } from '../net/lean-fetch.js';
import { createEndpointGate, retryAfterMs } from './endpoint-gate.js';
import type { Trace } from './trace.js';
import type { SecretBox } from '../secrets/secret-box.js';
import type { AnswerDraft } from './reply-writer.js';
import { createCompletionAccumulator, readCompletionChunks, UnfinishedAnswer } from './completion-stream.js';
import { loadOpenAiSdk, openAiSdk } from './openai-sdk.js';
import { cutText } from '../lib/text.js';

/** Model rounds (each possibly with tool calls) before an answer must have come, unless the scribe says otherwise. */
export const DEFAULT_MAX_ROUNDS = 8;

export const messages = {
  notConfigured: 'the openai agent is not configured (set OPENAI_MODEL, or a model for the scribe)',
  timedOut: (ms: number) => `the model endpoint timed out after ${ms / 1000}s`,
  httpError: (status: number, detail: string) => `the model endpoint answered HTTP ${status}${detail ? `: ${detail}` : ''}`,
  waited: (status: number, ms: number) => `the model endpoint answered HTTP ${status}; waited ${(ms / 1000).toFixed(1)} s as it asked`,
  unreachable: (reason: string | undefined) => `the model endpoint could not be reached${reason ? `: ${reason}` : ''}`,
  brokeOff: (reason: string) => `the model endpoint broke off its answer: ${reason}`,
  unfinished: "the model endpoint's answer ended before it was finished",
  unreadable: (detail: string) => `the model endpoint's answer could not be read: ${detail}`,
  errorInAnswer: (detail: string) => `the model endpoint answered with an error${detail ? `: ${detail}` : ''}`,
  cutAtLength: "the model's answer was cut off at its length limit (finish_reason length)",
  filtered: 'the model endpoint withheld its answer (finish_reason content_filter)',
  argumentRequired: (name: string) => `${name} is required`,
  noAnswer: 'the model answered with neither text nor a tool call',
  tooManyRounds: (rounds: number) => `the model did not finish within ${rounds} rounds of tool calls`,
  overBudget: (used: number, budget: number) => `the work used ${used} tokens, over its budget of ${budget}`,
  deadline: (ms: number) => `the work took longer than ${ms / 1000}s`,
};

/** How long a traced model call waited at the endpoint's gate, read back from its `messages.waited` text; 0 when it did not wait. */
export function waitedMsOf(error: string | null): number {
  const seconds = error ? /; waited (\d+(?:\.\d+)?) s as it asked$/.exec(error)?.[1] : undefined;
  return seconds === undefined ? 0 : Math.round(Number(seconds) * 1000);
}

/** What the agent needs besides the environment's settings. */
export interface OpenAiAgentDeps {
  /** Bounds a whole answer, rounds and retries included (default 4 minutes). */
  deadlineMs?: number;
  connectMcp?: McpConnector;
  /** How the environment's endpoint (OPENAI_BASE_URL, the operator's) is reached: `fetch`, or a lean one (net/lean-fetch.ts). */
  endpointFetch: ModelFetch;
  /** How a scribe's own base URL is reached: a fetch that obeys MODELS_ALLOW_PRIVATE's address policy. */
  scribeEndpointFetch: ModelFetch;
  /** Opens the scribes' sealed keys. */
  secrets: SecretBox;
}

/**
 * The openai agent: an OpenAI-compatible Chat Completions endpoint (OpenAI, Ollama, vLLM,
 * llama.cpp server) with tool calls for the builtin agent's actions. The official SDK
 * does the HTTP: per-call timeout, retries with backoff on 408/409/429/5xx (honouring
 * Retry-After). `deadlineMs` bounds a whole answer, rounds and retries included, so it
 * ends well inside the runtime's lease.
 *
 * Completions are streamed, and the text of an answer goes to the run's draft as it comes.
 * An endpoint that does not stream is asked plainly from the first time it shows it.
 *
 * The environment's endpoint and key are the operator's and trusted as set. A scribe's own
 * base URL is staff's: it is called through the guarded fetch, and with the scribe's own
 * key or none, never the environment's.
 */
export function createOpenAiAgent(
  config: OpenAiConfig,
  logger: Logger,
  { deadlineMs = 4 * 60_000, connectMcp, endpointFetch, scribeEndpointFetch, secrets }: OpenAiAgentDeps,
): Agent {
  // One client per endpoint and key: the environment's, and those scribes set for themselves.
  const clients = new Map<string, { client: OpenAI; endpoint: string }>();
  // Endpoints that asked this process to wait (429 or 503 with Retry-After), shared by every run.
  const gate = createEndpointGate();
  // Endpoints that answered a streamed request plainly, or refused it: asked plainly from then on, for the process.
  const plainEndpoints = new Set<string>();
  function clientFor(scribe: AgentInput['scribe'], sdk: typeof OpenAI): { client: OpenAI; endpoint: string } {
    const own = scribe.model_base_url ?? undefined;
    const scribeKey = scribe.model_api_key ? secrets.open(scribe.model_api_key) : undefined;
    const baseURL = own ?? config.baseUrl;
    const apiKey = own ? scribeKey : (scribeKey ?? config.apiKey);
    const id = `${own ? 'scribe' : 'env'}\n${baseURL}\n${apiKey ?? ''}`;
    let entry = clients.get(id);
    if (!entry) {
      const client = new sdk({
        baseURL,
        // The SDK insists on a key; with none, the Authorization header is left out (local servers take none).
        apiKey: apiKey ?? 'none',
        defaultHeaders: apiKey ? undefined : { Authorization: null },
        // Only what the product's configuration says: not the SDK's own reading of the environment.
        organization: null,
        project: null,
        // The SDK reads only what a FetchAnswer has of a Response (net/lean-fetch.ts).
        fetch: waitsAtTheGate(streamsAnyway(own ? scribeEndpointFetch : endpointFetch, () => plainEndpoints.add(baseURL))) as typeof fetch,
        timeout: config.timeoutMs,
        maxRetries: config.maxRetries,
        logger: logger.child({ source: 'openai' }),
      });
      entry = { client, endpoint: baseURL };
      clients.set(id, entry);
    }
    return entry;
  }

  /** Runs the conversation until a terminal tool call or plain text ends it, tracing every call. */
  async function converse<T>(input: AgentInput, conversation: ChatCompletionMessageParam[], tools: Toolset<T>, fromText: (text: string) => T): Promise<T> {
    const { scribe, trace } = input;
    const model = scribe.model ?? config.model;
    if (!model) throw new AgentError(messages.notConfigured);
    const { client, endpoint } = clientFor(scribe, await loadOpenAiSdk());
    const maxRounds = scribe.max_tool_rounds ?? DEFAULT_MAX_ROUNDS;
    const budget = scribe.token_budget ?? null;
    let used = 0;
    // The run's signal or the deadline: a timer cleared at the end, rather than AbortSignal.timeout,
    // whose signal only the garbage collector lets go.
    const ended = following(input.signal);
    const deadline = setTimeout(() => ended.abort(new Error(messages.deadline(deadlineMs))), deadlineMs);
    const signal = ended.signal;
    let mcp: McpToolset | undefined;
    try {
      const servers = connectMcp ? await input.mcpServers() : [];
      mcp = connectMcp && servers.length > 0 ? await connectMcp(servers, trace) : undefined;
      const { definitions, byName } = mcp && mcp.tools.length > 0 ? toolset([...tools.specs, ...mcp.tools.map((tool) => mcpToolSpec<T>(tool))]) : tools;
      for (let round = 0; round < maxRounds; round++) {
        const request = () => complete(client, endpoint, { model, messages: conversation, tools: definitions }, ended, input.draft);
        const { completion, started } = await modelCall(endpoint, model, request, trace, signal, input.signal);
        const usage = { input: completion.usage?.prompt_tokens ?? null, output: completion.usage?.completion_tokens ?? null };
        trace.record({ kind: 'model', name: model, durationMs: performance.now() - started, inputTokens: usage.input, outputTokens: usage.output });
        used += (usage.input ?? 0) + (usage.output ?? 0);
        if (budget !== null && used > budget) throw new AgentError(messages.overBudget(used, budget));
        const [choice] = completion.choices;
        // A cut or withheld answer is not the answer: a task would be done with half a result.
        if (choice?.finish_reason === 'length') throw new AgentError(messages.cutAtLength);
        if (choice?.finish_reason === 'content_filter') throw new AgentError(messages.filtered);
        const message = choice?.message;
        if (!message) throw new AgentError(messages.noAnswer);
        const calls = (message.tool_calls ?? []).filter((c) => c.type === 'function');
        if (calls.length === 0) {
          const text = message.content?.trim();
          if (!text) throw new AgentError(messages.noAnswer);
          return fromText(text);
        }
        conversation.push({ role: 'assistant', content: message.content ?? null, tool_calls: calls });
        for (const toolCall of calls) {
          const tool = byName.get(toolCall.function.name);
          const toolStarted = performance.now();
          const outcome = await runTool(tool, toolCall.function.arguments, input.tools, signal).catch((err: unknown) => {
            // Cut short by the deadline, the work fails as a model call cut short does; by a cancel, the run is stopped anyway.
            throw signal.aborted && !input.signal.aborted ? new AgentError(messages.deadline(deadlineMs)) : err;
          });
          const error = (outcome.result as { error?: unknown } | undefined)?.error;
          trace.record({
            kind: 'tool',
            name: toolCall.function.name,
            arguments: toolCall.function.arguments,
            result: outcome.final !== undefined ? outcome.final : outcome.result,
            durationMs: performance.now() - toolStarted,
            error: typeof error === 'string' ? error : null,
          });
          if (outcome.final !== undefined) return outcome.final;
          conversation.push({ role: 'tool', tool_call_id: toolCall.id, content: JSON.stringify(outcome.result) });
        }
      }
      throw new AgentError(messages.tooManyRounds(maxRounds));
    } finally {
      clearTimeout(deadline);
      ended.release();
      await mcp?.close();
    }
  }

  /**
   * One completion: streamed, its text going to `draft` as it comes, until the model starts a
   * tool call (that text was not the answer). An endpoint that refuses the stream (400 or 422)
   * is asked again plainly, and only plainly from then on if that works. A stream that stalls
   * ends the conversation (`ended`, the conversation's abort) as a timeout: the call fails, and
   * the conversation with it.
   */
  async function complete(
    client: OpenAI,
    endpoint: string,
    params: { model: string; messages: ChatCompletionMessageParam[]; tools: ChatCompletionTool[] },
    ended: AbortController,
    draft: AnswerDraft | undefined,
  ): Promise<ChatCompletion> {
    const { signal } = ended;
    if (plainEndpoints.has(endpoint)) return plainAnswer(await client.chat.completions.create(params, { signal }));
    // A call made again (after a wait) writes its answer afresh.
    draft?.discard();
    // The SDK's timeout ends when the answer begins; a stream that then stalls is given as long between its chunks.
    let heardAt = 0;
    let quiet: NodeJS.Timeout | undefined;
    // One timer for the call, set again only when it fires: not one per chunk.
    const listen = (ms: number) => {
      quiet = setTimeout(() => {
        const silentMs = performance.now() - heardAt;
        if (silentMs < config.timeoutMs) return listen(config.timeoutMs - silentMs);
        ended.abort(new (openAiSdk().APIConnectionTimeoutError)());
      }, ms);
    };
    try {
      // The SDK makes the call (retries, errors by status); its answer's events are read here (readCompletionChunks).
      const response = (await client.chat.completions
        .create({ ...params, stream: true, stream_options: { include_usage: true } }, { signal })
        .asResponse()) as unknown as FetchAnswer;
      heardAt = performance.now();
      listen(config.timeoutMs);
      const answer = createCompletionAccumulator();
      let calling = false;
      await readCompletionChunks(response, (chunk) => {
        heardAt = performance.now();
        const added = answer.add(chunk);
        if (calling) return;
        if (added.calling) {
          // The text before a tool call was not the answer.
          calling = true;
          draft?.discard();
        } else if (added.text) draft?.write(added.text);
      });
      return answer.completion();
    } catch (err) {
      // Stalled, unless the run's cancel or the deadline came first (the first reason stays).
      const sdk = openAiSdk();
      if (signal.reason instanceof sdk.APIConnectionTimeoutError) throw signal.reason;
      if (!(err instanceof sdk.APIError && (err.status === 400 || err.status === 422)) || signal.aborted) throw err;
      const completion = plainAnswer(await client.chat.completions.create(params, { signal }));
      plainEndpoints.add(endpoint);
      return completion;
    } finally {
      clearTimeout(quiet);
    }
  }

  /**
   * One model call through the endpoint's gate. An answer that asks to wait (429 or 503 with
   * Retry-After) pauses the endpoint for every run of this process; this run waits too, says so
   * in its trace, and calls again: it does not fail for it. Any other failure is put in words.
   */
  async function modelCall<T>(
    endpoint: string,
    model: string,
    request: () => Promise<T>,
    trace: Trace,
    signal: AbortSignal,
    stopping: AbortSignal,
  ): Promise<{ completion: T; started: number }> {
    let ticket = await gate.enter(endpoint, signal);
    for (;;) {
      const started = performance.now();
      try {
        const completion = await call(request, signal, stopping);
        ticket.leave();
        return { completion, started };
      } catch (err) {
        // `call` words an endpoint's answer as an AgentError whose cause is the SDK's error.
        const cause = (err as { cause?: unknown }).cause;
        const answered = cause instanceof openAiSdk().APIError && cause.status !== undefined ? cause : undefined;
        const pauseMs = answered?.headers ? retryAfterMs(answered.status, answered.headers) : undefined;
        ticket.leave(pauseMs);
        if (!answered || pauseMs === undefined || signal.aborted) {
          trace.record({ kind: 'model', name: model, durationMs: performance.now() - started, error: (err as Error).message });
          throw err;
        }
        const callMs = performance.now() - started;
        ticket = await gate.enter(endpoint, signal).catch((reason: unknown) => {
          trace.record({ kind: 'model', name: model, durationMs: performance.now() - started, error: (err as Error).message });
          throw reason;
        });
        trace.record({ kind: 'model', name: model, durationMs: callMs + ticket.waitedMs, error: messages.waited(answered.status, ticket.waitedMs) });
      }
    }
  }

  /** One SDK call with its failures put in words staff can act on. */
  async function call<T>(request: () => Promise<T>, signal: AbortSignal, stopping: AbortSignal): Promise<T> {
    try {
      return await request();
    } catch (err) {
      if (stopping.aborted) throw err;
      // Before the deadline's check: a stream that stalls aborts the conversation as a timeout (`complete`).
      const sdk = openAiSdk();
      if (err instanceof sdk.APIConnectionTimeoutError) throw new AgentError(messages.timedOut(config.timeoutMs));
      if (signal.aborted) throw new AgentError(messages.deadline(deadlineMs));
      if (err instanceof sdk.APIError && err.status !== undefined) throw new AgentError(messages.httpError(err.status, detailOf(err)), { cause: err });
      if (err instanceof sdk.APIConnectionError) throw new AgentError(messages.unreachable(networkFailure(err)));
      // The answer had begun: what went wrong while reading it.
      if (err instanceof sdk.APIError) throw new AgentError(messages.errorInAnswer(detailOf(err)), { cause: err });
      const broken = networkFailure(err);
      if (broken) throw new AgentError(messages.brokeOff(broken));
      if (err instanceof UnfinishedAnswer) throw new AgentError(messages.unfinished);
      if (err instanceof SyntaxError || err instanceof sdk.OpenAIError) throw new AgentError(messages.unreadable(err.message));
      throw err;
    }
  }

  return {
    async answer(input): Promise<SessionOutcome> {
      const conversation: ChatCompletionMessageParam[] = [
        { role: 'system', content: systemPrompt(input, 'You are chatting with a user. Answer with the reply tool, or with plain text.') },
        ...input.transcript.flatMap((m): ChatCompletionMessageParam[] => {
          if (m.author === 'scribe') return [{ role: 'assistant', content: m.text }];
          if (m.author === 'system') return [];
          return [{ role: 'user', content: m.author === 'staff' ? `[staff] ${m.text}` : m.text }];
        }),
      ];
      return converse(input, conversation, sessionTools, (text) => ({ reply: text }));
    },

    async work(input): Promise<TaskOutcome> {
      const { task, history, attachments } = input;
      const lines = [
        `Task: ${task.title}`,
        `Summary: ${task.summary}`,
        `Acceptance criteria: ${task.acceptance_criteria ?? 'none given'}`,
        ...history.filter((e) => e.text && e.author !== 'system').map((e) => (e.author === 'staff' ? `Staff input: ${e.text}` : `Your earlier note: ${e.text}`)),
      ];
      const conversation: ChatCompletionMessageParam[] = [
        { role: 'system', content: systemPrompt(input, 'Work the task below. Finish with complete_task, or ask_for_input when you cannot go on without an answer.') },
        {
          role: 'user',
          content:
            attachments.length === 0
              ? lines.join('\n')
              : [
                  { type: 'text', text: `${lines.join('\n')}\n\nThe task came with ${attachments.length === 1 ? 'this file' : `these ${attachments.length} files`}:` },
                  ...(await attachmentParts(attachments, { vision: input.scribe.model_vision ?? false })),
                ],
        },
      ];
      return converse(input, conversation, taskTools, (text) => ({ status: 'done', result: text }));
    },
  };
}

function systemPrompt(input: AgentInput, role: string): string {
  const own = input.scribe.instructions.trim();
  return [`You are ${input.scribe.name}, a scribe: an agent that works for one organization.`, role, own && `Your instructions:\n${own}`].filter(Boolean).join('\n\n');
}

/** The most of an endpoint's error answer staff are shown: enough to act on, not a page of someone's internals. */
const DETAIL_CHARS = 300;

/** What the endpoint answered with its error status (the error's message, or the body's text), cut to DETAIL_CHARS. */
function detailOf(err: InstanceType<typeof OpenAI.APIError>): string {
  const error = err.error as { message?: unknown } | undefined;
  // Without a JSON error message the SDK's own message is "<status> <body text>", or says there was no body.
  const text = typeof error?.message === 'string' ? error.message : err.message.replace(/^\d{3} /, '');
  if (text === 'status code (no body)') return '';
  return Array.from(text.slice(0, DETAIL_CHARS + 1))
    .slice(0, DETAIL_CHARS)
    .join('');
}

/** A tool the model may call: data tools return a result to it; terminal tools end the work with `final`. */
interface ToolSpec<T> {
  definition: ChatCompletionTool & { type: 'function' };
  /** `signal`: the run's cancel or deadline, which a call that waits on something outside (an MCP server) must end at. */
  run: (args: Record<string, unknown>, tools: Toolbox, signal: AbortSignal) => Promise<{ result?: unknown; final?: T }>;
}

/** An MCP server's tool as the model is given it; its failures (timeouts, errors) go back to the model as `{error}`. */
function mcpToolSpec<T>(tool: McpTool): ToolSpec<T> {
  return {
    definition: { type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } },
    async run(args, _tools, signal) {
      try {
        return { result: await tool.call(args, signal) };
      } catch (err) {
        // Cancelled or out of time: the run ends here, and the model hears nothing more.
        if (signal.aborted) throw err;
        return { result: { error: `${mcpMessages.toolFailed}${cutText((err as Error).message, 200)}` } };
      }
    },
  };
}

/**
 * A plain (not streamed) answer as the SDK hands it over, which it does not check: one without
 * a list of choices (an error page's JSON, say) is refused in words, as an unreadable stream is.
 */
function plainAnswer(completion: ChatCompletion): ChatCompletion {
  if (!Array.isArray((completion as { choices?: unknown } | null)?.choices)) throw new AgentError(messages.unreadable('it holds no choices'));
  return completion;
}

/** Runs a tool call; bad arguments and refused actions go back to the model as `{error}` so it can correct itself. */
async function runTool<T>(tool: ToolSpec<T> | undefined, rawArgs: string, tools: Toolbox, signal: AbortSignal): Promise<{ result?: unknown; final?: T }> {
  if (!tool) return { result: { error: 'unknown tool' } };
  let args: unknown;
  try {
    args = JSON.parse(rawArgs || '{}');
  } catch {
    return { result: { error: 'arguments are not valid JSON' } };
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return { result: { error: 'arguments must be a JSON object' } };
  try {
    return await tool.run(args as Record<string, unknown>, tools, signal);
  } catch (err) {
    // Refusals a caller could see (validation, not found) are the model's to fix; anything else is ours.
    if (err instanceof AgentError || err instanceof HttpError) return { result: { error: err.message } };
    throw err;
  }
}

const fn = (name: string, description: string, properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'function' as const,
  function: { name, description, parameters: { type: 'object', properties, required, additionalProperties: false } },
});
const str = (description: string) => ({ type: 'string', description });
const bool = (description: string) => ({ type: 'boolean', description });
const text = (args: Record<string, unknown>, key: string) => (typeof args[key] === 'string' ? (args[key] as string) : '');
/** A text the tool cannot do without: missing or blank, the call goes back to the model refused. */
const required = (args: Record<string, unknown>, key: string) => {
  const value = text(args, key);
  if (!value.trim()) throw new AgentError(messages.argumentRequired(key));
  return value;
};
const flag = (args: Record<string, unknown>, key: string) => (typeof args[key] === 'boolean' ? (args[key] as boolean) : undefined);
const object = (args: Record<string, unknown>, key: string) =>
  typeof args[key] === 'object' && args[key] !== null && !Array.isArray(args[key]) ? (args[key] as Record<string, unknown>) : undefined;

/** The organization's data, as both kinds of work may use it: they return results, never end the work. */
const dataTools: ReadonlyArray<ToolSpec<never>> = [
  {
    definition: fn(TOOL_NAMES.entryTypes, 'The entry types of the organization and their fields.', {}),
    run: async (_args, tools) => ({ result: await tools.entryTypes() }),
  },
  {
    definition: fn(
      TOOL_NAMES.searchEntries,
      'Find entries. The query uses the search language: words, field:value, field>number, relationship:<name>, && and ||.',
      { query: str('The search query'), entry_type: str('Name of one entry type to search; all when omitted') },
      ['query'],
    ),
    run: async (args, tools) => ({ result: await tools.searchEntries({ q: text(args, 'query'), entryType: text(args, 'entry_type') || undefined }) }),
  },
  {
    definition: fn(
      TOOL_NAMES.createEntry,
      'Create an entry. fields is an object keyed by field name; relationship fields take a list of entry ids.',
      { entry_type: str('Entry type name'), fields: { type: 'object', description: 'Field values by field name' }, draft: bool('Create as a draft') },
      ['entry_type', 'fields'],
    ),
    run: async (args, tools) => ({
      result: await tools.createEntry({ entryType: required(args, 'entry_type'), fields: object(args, 'fields') ?? {}, draft: flag(args, 'draft') }),
    }),
  },
  {
    definition: fn(
      TOOL_NAMES.updateEntry,
      'Change an entry: the fields given (null clears one), its draft or archived flag.',
      { id: str('Entry id'), fields: { type: 'object', description: 'Field values to change' }, draft: bool('Draft flag'), archived: bool('Archived flag') },
      ['id'],
    ),
    run: async (args, tools) => ({
      result: await tools.updateEntry({ id: required(args, 'id'), fields: object(args, 'fields'), draft: flag(args, 'draft'), archived: flag(args, 'archived') }),
    }),
  },
  {
    definition: fn(TOOL_NAMES.workload, 'Your tasks: how many in each status and the unfinished ones.', {}),
    run: async (_args, tools) => ({ result: await tools.workload() }),
  },
];

const replyTool: ToolSpec<SessionOutcome> = {
  definition: fn('reply', 'Send your reply to the user.', { text: str('The reply'), end_session: bool('True when the conversation is over') }, ['text']),
  run: async (args) => ({ final: { reply: required(args, 'text'), end: flag(args, 'end_session') ?? false } }),
};

const completeTaskTool: ToolSpec<TaskOutcome> = {
  definition: fn('complete_task', 'Mark the task done with a note of the result.', { result: str('What was done, and the outcome') }, ['result']),
  run: async (args) => ({ final: { status: 'done', result: required(args, 'result') } }),
};

const askForInputTool: ToolSpec<TaskOutcome> = {
  definition: fn('ask_for_input', 'Put the task on hold with a question for staff.', { question: str('The question') }, ['question']),
  run: async (args) => ({ final: { status: 'waiting', question: required(args, 'question') } }),
};

/** Tools offered to the model, as each call sends them and as its tool calls are looked up. */
interface Toolset<T> {
  specs: ReadonlyArray<ToolSpec<T>>;
  definitions: ChatCompletionTool[];
  byName: ReadonlyMap<string, ToolSpec<T>>;
}

function toolset<T>(specs: ReadonlyArray<ToolSpec<T>>): Toolset<T> {
  return { specs, definitions: specs.map((spec) => spec.definition), byName: new Map(specs.map((spec) => [spec.definition.function.name, spec])) };
}

// The same for every run: made once, not per run (a scribe's MCP tools are added per run, in `converse`).
const sessionTools = toolset<SessionOutcome>([...dataTools, replyTool]);
const taskTools = toolset<TaskOutcome>([...dataTools, completeTaskTool, askForInputTool]);

/**
 * An abort of its own that `signal` aborts too, until `release()`: a listener, removed when the
 * work ends, rather than AbortSignal.any, whose composites a long-lived signal keeps.
 */
function following(signal: AbortSignal): AbortController & { release(): void } {
  const controller = new AbortController();
  const follow = () => controller.abort(signal.reason);
  if (signal.aborted) follow();
  else signal.addEventListener('abort', follow, { once: true });
  return Object.assign(controller, { release: () => signal.removeEventListener('abort', follow) });
}

/**
 * Some servers answer a streamed request with a plain completion: that answer is handed to the
 * SDK as the one-event stream it asked for, and `onPlain` told, so the endpoint is asked
 * plainly from then on. Every other answer passes as it came.
 */
function streamsAnyway(inner: ModelFetch, onPlain: () => void): ModelFetch {
  return async (input, init) => {
    const response = await inner(input, init);
    const type = response.headers.get('content-type') ?? '';
    if (!response.ok || type.startsWith('text/event-stream') || !asksToStream(init?.body)) return response;
    const body = await response.text();
    const completion = parsedCompletion(body);
    if (!completion) return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
    onPlain();
    const headers = new Headers(response.headers);
    headers.set('content-type', 'text/event-stream');
    headers.delete('content-length');
    return new Response(`data: ${JSON.stringify(asChunk(completion))}\n\ndata: [DONE]\n\n`, { status: response.status, statusText: response.statusText, headers });
  };
}

function asksToStream(body: unknown): boolean {
  if (typeof body !== 'string') return false;
  try {
    return (JSON.parse(body) as { stream?: unknown }).stream === true;
  } catch {
    return false;
  }
}

function parsedCompletion(body: string): ChatCompletion | undefined {
  try {
    const parsed = JSON.parse(body) as Partial<ChatCompletion>;
    return Array.isArray(parsed.choices) ? (parsed as ChatCompletion) : undefined;
  } catch {
    return undefined;
  }
}

/** A whole completion as the one chunk of a stream. */
function asChunk(completion: ChatCompletion): ChatCompletionChunk {
  return {
    id: completion.id,
    object: 'chat.completion.chunk',
    created: completion.created,
    model: completion.model,
    choices: completion.choices.map(({ index, message, finish_reason }) => ({
      index,
      finish_reason,
      delta: {
        role: 'assistant',
        content: message.content,
        tool_calls: message.tool_calls?.flatMap((call, i) => (call.type === 'function' ? [{ index: i, id: call.id, type: 'function' as const, function: call.function }] : [])),
      },
    })),
    usage: completion.usage,
  };
}

/**
 * The SDK retries a 429 or 503 itself, honouring Retry-After, but for that run alone; when the
 * endpoint says how long to wait, the answer is marked not to be retried, and the gate
 * (`modelCall`) makes every run of the process wait instead.
 */
function waitsAtTheGate(inner: ModelFetch): ModelFetch {
  return async (input, init) => {
    const response = await inner(input, init);
    if (retryAfterMs(response.status, response.headers) === undefined) return response;
    const headers = new Headers(response.headers);
    headers.set('x-should-retry', 'false');
    // The same answer under other headers (a Response's own cannot be changed).
    return {
      ok: response.ok,
      status: response.status,
      statusText: response.statusText,
      url: response.url,
      headers,
      body: response.body,
      get bodyUsed() {
        return response.bodyUsed;
      },
      text: () => response.text(),
      json: () => response.json(),
    };
  };
}
