/**
 * The agent bench's model: a local OpenAI-compatible server that answers every chat
 * completion after `delayMs`, streamed when asked, with `toolRounds` rounds of a tool call
 * before its reply. It counts calls, the most it held at once, and when it first heard of
 * each marker (a word a test puts in a task's summary), so the bench can say when a run
 * started without reading the database.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ModelOptions {
  delayMs: number;
  /** Tool calls (`list_entry_types`) before the reply. */
  toolRounds: number;
  /** A streamed reply comes in this many pieces (3 unless set), this far apart (all at once unless set). */
  chunks?: number;
  chunkDelayMs?: number;
}

const USAGE = { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 };
const REPLY = 'Done: the task is handled.';

export async function startBenchModel(options: ModelOptions) {
  let inFlight = 0;
  /** `firstAt`: when the first call since the last reset came (Date.now()). */
  const stats: { calls: number; peak: number; streamed: number; firstAt?: number } = { calls: 0, peak: 0, streamed: 0 };
  const firstSeen = new Map<string, number>();
  const watched = new Set<string>();

  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (raw += chunk));
    req.on('end', () => {
      stats.firstAt ??= Date.now();
      stats.calls++;
      inFlight++;
      stats.peak = Math.max(stats.peak, inFlight);
      for (const marker of watched) if (!firstSeen.has(marker) && raw.includes(marker)) firstSeen.set(marker, Date.now());
      const body = JSON.parse(raw) as { model: string; stream?: boolean; messages: Array<{ role: string }> };
      const rounds = body.messages.filter((m) => m.role === 'tool').length;
      const message =
        rounds < options.toolRounds
          ? { role: 'assistant', content: null, tool_calls: [{ id: `call_${stats.calls}`, type: 'function', function: { name: 'list_entry_types', arguments: '{}' } }] }
          : { role: 'assistant', content: REPLY };
      const timer = setTimeout(() => {
        inFlight--;
        if (body.stream) {
          stats.streamed++;
          streamAnswer(res, body.model, message, options);
        } else {
          const completion = {
            id: 'chatcmpl-bench',
            object: 'chat.completion',
            created: 0,
            model: body.model,
            choices: [{ index: 0, message, finish_reason: message.content ? 'stop' : 'tool_calls' }],
            usage: USAGE,
          };
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(completion));
        }
      }, options.delayMs);
      res.on('close', () => {
        if (!res.writableEnded) {
          clearTimeout(timer);
          inFlight--;
        }
      });
    });
  });
  server.keepAliveTimeout = 60_000;
  server.maxConnections = 20_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    stats,
    /** Notes when a call first carries `marker`. */
    watch(marker: string): void {
      watched.add(marker);
    },
    firstSeenAt: (marker: string) => firstSeen.get(marker),
    reset(): void {
      stats.calls = 0;
      stats.peak = inFlight;
      stats.streamed = 0;
      stats.firstAt = undefined;
    },
    async close(): Promise<void> {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
export type BenchModel = Awaited<ReturnType<typeof startBenchModel>>;

/** The answer as a server-sent event stream: the reply in three chunks, then usage. */
function streamAnswer(res: http.ServerResponse, model: string, message: { content: string | null; tool_calls?: unknown[] }, { chunks = 3, chunkDelayMs = 0 }: ModelOptions): void {
  const chunk = (delta: object, finish: string | null = null, usage: object | null = null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 0, model, choices: usage ? [] : [{ index: 0, delta, finish_reason: finish }], usage })}\n\n`;
  const parts: string[] = [chunk({ role: 'assistant', content: '' })];
  if (message.content) {
    const piece = Math.ceil(message.content.length / chunks);
    for (let i = 0; i < message.content.length; i += piece) parts.push(chunk({ content: message.content.slice(i, i + piece) }));
    parts.push(chunk({}, 'stop'));
  } else {
    parts.push(chunk({ tool_calls: (message.tool_calls as object[]).map((call, index) => ({ index, ...call })) }), chunk({}, 'tool_calls'));
  }
  parts.push(chunk({}, null, USAGE), 'data: [DONE]\n\n');
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  if (chunkDelayMs === 0) {
    res.end(parts.join(''));
    return;
  }
  const next = () => {
    if (res.destroyed) return;
    res.write(parts.shift()!);
    if (parts.length === 0) res.end();
    else setTimeout(next, chunkDelayMs);
  };
  next();
}
