import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** How the receiver answers its n-th request (0-based): a status, headers, a body, after a delay. */
export type Answer = (request: Received, n: number) => { status: number; headers?: Record<string, string>; body?: string; delayMs?: number };

export interface WebhookReceiver {
  url: string;
  port: number;
  received: Received[];
  /** The parsed bodies received, in order. */
  events(): Array<{ id: string; type: string; created_at: string; data: Record<string, any> }>;
  /** Resolves once `count` requests have arrived (fails after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** A real HTTP server on loopback that records every webhook POST and answers as `answer` says (200 by default). */
export async function startWebhookReceiver(answer: Answer = () => ({ status: 200, body: 'ok' }), port = 0): Promise<WebhookReceiver> {
  const received: Received[] = [];
  const waiters: Array<() => void> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request = { path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      const n = received.length;
      received.push(request);
      waiters.splice(0).forEach((wake) => wake());
      const { status, headers = {}, body = '', delayMs = 0 } = answer(request, n);
      setTimeout(() => {
        if (!res.destroyed) res.writeHead(status, headers).end(body);
      }, delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}`,
    port: bound,
    received,
    events: () => received.map((r) => JSON.parse(r.body)),
    async waitFor(count, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (received.length < count) {
        if (Date.now() > deadline) throw new Error(`the receiver got ${received.length} of ${count} requests in ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 50);
        });
      }
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
