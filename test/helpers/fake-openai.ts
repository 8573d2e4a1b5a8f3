import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * How an answer is given to a request that asks for a stream: `chunks` (the reply's text in
 * that many pieces, `chunkDelayMs` apart; one piece by default), or `plain` (a plain JSON
 * completion, as a server that ignores `stream` does), or `refusesStream` (400 to a streamed
 * request, leaving the step for the plain request that follows).
 */
export interface Streaming {
  chunks?: number;
  chunkDelayMs?: number;
  /** Stops the stream after this many of its text pieces until `release()`: the model is still writing. */
  holdAt?: number;
  plain?: boolean;
  refusesStream?: boolean;
}

/** What the fake does with one request to /v1/chat/completions. */
export type Step =
  | ({ reply: string; usage?: Usage; delayMs?: number /** The answer's finish_reason (`stop`). */; finish?: string } & Streaming)
  | ({ toolCalls: Array<{ name: string; arguments: unknown }>; usage?: Usage /** Text the model writes before its calls. */; preamble?: string } & Streaming)
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | { status: number; text: string; headers?: Record<string, string> }
  | { hang: true }
  /** A streamed answer of these events' data as written (`{not json`, `[DONE]`), then its end, or a broken connection. */
  | { events: string[]; ending?: 'end' | 'break' };

/** The token counts a response reports; every answer reports some (DEFAULT_USAGE unless scripted). */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
}
export const DEFAULT_USAGE: Usage = { prompt_tokens: 120, completion_tokens: 30 };

export interface SeenRequest {
  headers: http.IncomingHttpHeaders;
  body: {
    model: string;
    stream?: boolean;
    stream_options?: { include_usage?: boolean };
    messages: Array<{ role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string }>;
    tools?: Array<{ function: { name: string } }>;
  };
}

/**
 * A local server speaking the Chat Completions protocol, tool calls included. Each request
 * takes the next scripted step; requests are recorded so tests can check what was sent.
 */
export async function startFakeOpenAi() {
  const steps: Step[] = [];
  const seen: SeenRequest[] = [];
  const hanging = new Set<http.ServerResponse>();
  /** Streams stopped at their `holdAt`, each waiting to go on. */
  const holding = new Set<() => void>();
  let calls = 0;
  /** Every request that reached the server, whatever its path. */
  const hits = { count: 0, /** Held or streaming calls the client gave up on (closed the connection). */ abandoned: 0, /** Streams written to their end. */ streamed: 0 };
  /** Calls being answered now, and the most at once, by the model asked for. */
  const open = new Map<string, number>();
  const peak = new Map<string, number>();
  /** While set and in the future, every call is answered with this status and headers instead of a step. */
  let overload: { until: number; status: number; headers: Record<string, string>; refused: number } | undefined;

  const server = http.createServer((req, res) => {
    hits.count++;
    let raw = '';
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.writeHead(404).end();
        return;
      }
      if (overload && Date.now() < overload.until) {
        overload.refused++;
        res.writeHead(overload.status, { 'content-type': 'application/json', ...overload.headers }).end(JSON.stringify({ error: { message: 'overloaded' } }));
        return;
      }
      const body = JSON.parse(raw) as SeenRequest['body'];
      seen.push({ headers: req.headers, body });
      const asked = body.model;
      open.set(asked, (open.get(asked) ?? 0) + 1);
      peak.set(asked, Math.max(peak.get(asked) ?? 0, open.get(asked)!));
      res.on('close', () => open.set(asked, open.get(asked)! - 1));
      if (body.stream && steps[0] && 'refusesStream' in steps[0] && steps[0].refusesStream) {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'stream is not supported' } }));
        return;
      }
      const step = steps.shift() ?? { status: 500, body: { error: { message: 'no step scripted' } } };
      if ('hang' in step) {
        hanging.add(res);
        res.on('close', () => {
          if (hanging.delete(res)) hits.abandoned++;
        });
        return;
      }
      if ('events' in step) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const data of step.events) res.write(`data: ${data}\n\n`);
        if (step.ending === 'break') setTimeout(() => res.socket?.destroy(), 20);
        else res.end();
        return;
      }
      if ('text' in step) {
        res.writeHead(step.status, { 'content-type': 'text/plain', ...step.headers }).end(step.text);
        return;
      }
      if ('status' in step) {
        res.writeHead(step.status, { 'content-type': 'application/json', ...step.headers }).end(JSON.stringify(step.body ?? { error: { message: `status ${step.status}` } }));
        return;
      }
      calls++;
      const delayMs = 'delayMs' in step ? (step.delayMs ?? 0) : 0;
      const model = seen.at(-1)!.body.model;
      const message =
        'reply' in step
          ? { role: 'assistant', content: step.reply }
          : {
              role: 'assistant',
              content: null,
              tool_calls: step.toolCalls.map((c, i) => ({
                id: `call_${calls}_${i}`,
                type: 'function',
                function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
              })),
            };
      const usage = { ...(step.usage ?? DEFAULT_USAGE), total_tokens: (step.usage ?? DEFAULT_USAGE).prompt_tokens + (step.usage ?? DEFAULT_USAGE).completion_tokens };
      if (body.stream && !step.plain) {
        const chunks = streamOf(step, { id: `chatcmpl-${calls}`, model, usage: body.stream_options?.include_usage ? usage : undefined, calls });
        const hold = step.holdAt === undefined ? undefined : { at: step.holdAt + 1, wait: () => new Promise<void>((resolve) => holding.add(resolve)) };
        const send = () => writeStream(res, chunks, step.chunkDelayMs ?? 0, hold, () => hits.abandoned++).then((whole) => whole && hits.streamed++);
        if (delayMs > 0) setTimeout(send, delayMs);
        else void send();
        return;
      }
      const answer = () =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            id: `chatcmpl-${calls}`,
            object: 'chat.completion',
            created: 1_763_700_000,
            model,
            choices: [{ index: 0, message, finish_reason: 'reply' in step ? (step.finish ?? 'stop') : 'tool_calls' }],
            usage,
          }),
        );
      if (delayMs > 0) setTimeout(answer, delayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    port,
    seen,
    hits,
    /** Calls of `model` being answered now. */
    openCalls: (model: string) => open.get(model) ?? 0,
    /** The most calls of `model` answered at once so far. */
    peakCalls: (model: string) => peak.get(model) ?? 0,
    script(...next: Step[]) {
      steps.push(...next);
    },
    /** Answers every call with `status` (and headers) for `ms` from now; returns how many it refused so far. */
    overload(ms: number, status: number, headers: Record<string, string>) {
      overload = { until: Date.now() + ms, status, headers, refused: 0 };
      return () => overload?.refused ?? 0;
    },
    /** Lets the streams stopped at their `holdAt` go on. */
    release() {
      for (const resume of [...holding]) resume();
      holding.clear();
    },
    /** Drops the steps no request took. */
    clear() {
      steps.length = 0;
    },
    async close() {
      for (const res of [...hanging]) {
        hanging.delete(res);
        res.destroy();
      }
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

type Chunk = Record<string, unknown>;

/** The chunks of a streamed answer: the text in `chunks` pieces, or each tool call's name then its arguments in two pieces; usage last if asked for. */
function streamOf(
  step: Extract<Step, { reply: string } | { toolCalls: unknown }>,
  { id, model, usage, calls }: { id: string; model: string; usage?: Usage & { total_tokens: number }; calls: number },
): Chunk[] {
  const chunk = (delta: Chunk, finish: string | null = null): Chunk => ({
    id,
    object: 'chat.completion.chunk',
    created: 1_763_700_000,
    model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const pieces = (text: string, n: number) => Array.from({ length: n }, (_, i) => text.slice(Math.floor((i * text.length) / n), Math.floor(((i + 1) * text.length) / n)));
  const out: Chunk[] = [chunk({ role: 'assistant', content: '' })];
  if ('reply' in step) {
    for (const piece of pieces(step.reply, step.chunks ?? 1)) out.push(chunk({ content: piece }));
    out.push(chunk({}, step.finish ?? 'stop'));
  } else {
    if (step.preamble) for (const piece of pieces(step.preamble, step.chunks ?? 1)) out.push(chunk({ content: piece }));
    step.toolCalls.forEach((call, index) => {
      const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
      out.push(chunk({ tool_calls: [{ index, id: `call_${calls}_${index}`, type: 'function', function: { name: call.name, arguments: '' } }] }));
      for (const piece of pieces(args, 2)) out.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    });
    out.push(chunk({}, 'tool_calls'));
  }
  if (usage) out.push({ id, object: 'chat.completion.chunk', created: 1_763_700_000, model, choices: [], usage });
  return out;
}

/**
 * Writes `chunks` as server-sent events, `delayMs` apart, waiting at chunk `hold.at` (the first
 * is the role) for `hold.wait()`; resolves true when written whole, false when the client went away first.
 */
function writeStream(
  res: http.ServerResponse,
  chunks: Chunk[],
  delayMs: number,
  hold: { at: number; wait: () => Promise<void> } | undefined,
  onAbandoned: () => void,
): Promise<boolean> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  return new Promise((resolve) => {
    let next = 0;
    let timer: NodeJS.Timeout | undefined;
    let closed = false;
    const gone = () => {
      closed = true;
      clearTimeout(timer);
      onAbandoned();
      resolve(false);
    };
    res.once('close', gone);
    const write = () => {
      if (closed) return;
      if (hold && next === hold.at) {
        const waiting = hold.wait();
        hold = undefined;
        void waiting.then(write);
        return;
      }
      if (next < chunks.length) {
        res.write(`data: ${JSON.stringify(chunks[next++])}\n\n`);
        timer = setTimeout(write, next === 1 ? 0 : delayMs);
        return;
      }
      res.off('close', gone);
      res.end('data: [DONE]\n\n');
      resolve(true);
    };
    write();
  });
}
