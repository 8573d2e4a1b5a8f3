import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the fake does with one request to /v1/chat/completions. */
export type Step =
  | { reply: string; usage?: Usage; delayMs?: number }
  | { toolCalls: Array<{ name: string; arguments: unknown }>; usage?: Usage }
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | { status: number; text: string; headers?: Record<string, string> }
  | { hang: true };

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
  let calls = 0;
  /** Every request that reached the server, whatever its path. */
  const hits = { count: 0, /** Held calls the client gave up on (closed the connection). */ abandoned: 0 };
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
      seen.push({ headers: req.headers, body: JSON.parse(raw) });
      const asked = seen.at(-1)!.body.model;
      open.set(asked, (open.get(asked) ?? 0) + 1);
      peak.set(asked, Math.max(peak.get(asked) ?? 0, open.get(asked)!));
      res.on('close', () => open.set(asked, open.get(asked)! - 1));
      const step = steps.shift() ?? { status: 500, body: { error: { message: 'no step scripted' } } };
      if ('hang' in step) {
        hanging.add(res);
        res.on('close', () => {
          if (hanging.delete(res)) hits.abandoned++;
        });
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
      const answer = () => res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: `chatcmpl-${calls}`,
          object: 'chat.completion',
          created: 1_763_700_000,
          model,
          choices: [{ index: 0, message, finish_reason: 'reply' in step ? 'stop' : 'tool_calls' }],
          usage: { ...(step.usage ?? DEFAULT_USAGE), total_tokens: (step.usage ?? DEFAULT_USAGE).prompt_tokens + (step.usage ?? DEFAULT_USAGE).completion_tokens },
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
