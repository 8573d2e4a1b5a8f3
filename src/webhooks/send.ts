import { request, type Agent } from 'undici';
import type { AddressPolicy } from '../net/address-policy.js';
import { checkLiteralAddress, createGuardedAgent, errorCodes, networkFailure } from '../net/guarded-agent.js';

/** How much of an endpoint's answer is kept for the console. */
export const RESPONSE_KEEP_BYTES = 4096;
/** How many of an answer's headers are kept, and how much of each value: a bounded record, whatever the endpoint sends. */
export const RESPONSE_KEEP_HEADERS = 40;
export const HEADER_KEEP_CHARS = 200;

export interface SendOptions {
  /** The whole attempt, connect to last byte read (15 s by default, as docs/webhooks.md says). */
  timeoutMs: number;
}

/** What one POST came to: an HTTP answer (any status), or no answer and why; either way the headers it was sent with. */
export type Attempt = { requestHeaders: Record<string, string> } & (
  | { kind: 'answered'; status: number; headers: Record<string, string>; body: string; retryAfterMs: number | null; durationMs: number }
  | { kind: 'unanswered'; error: string; durationMs: number }
);

export interface Sender {
  post(url: string, headers: Record<string, string>, body: string): Promise<Attempt>;
  close(): Promise<void>;
}

/**
 * POSTs webhook bodies: through the guarded agent (the address policy at connect time), never
 * following a redirect (undici's `request` does not), within `timeoutMs`, keeping the first
 * bytes of the answer.
 */
export function createSender(policy: AddressPolicy, options: SendOptions): Sender {
  const agent: Agent = createGuardedAgent(policy, { headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs, connections: 16 });

  async function post(url: string, headers: Record<string, string>, body: string): Promise<Attempt> {
    const started = performance.now();
    const durationMs = () => Math.round(performance.now() - started);
    const timeout = AbortSignal.timeout(options.timeoutMs);
    const requestHeaders = { ...headers, 'content-type': 'application/json', 'user-agent': 'Scribe-Webhooks/1' };
    try {
      const target = new URL(url);
      checkLiteralAddress(target, policy);
      const response = await request(target, {
        dispatcher: agent,
        method: 'POST',
        signal: timeout,
        headers: requestHeaders,
        body,
      });
      const kept = await firstBytes(response.body, RESPONSE_KEEP_BYTES);
      const answered = { status: response.statusCode, headers: keptHeaders(response.headers), body: kept, retryAfterMs: retryAfter(response.headers['retry-after']) };
      return { kind: 'answered', requestHeaders, ...answered, durationMs: durationMs() };
    } catch (err) {
      return { kind: 'unanswered', requestHeaders, error: reasonOf(err, timeout, options.timeoutMs), durationMs: durationMs() };
    }
  }

  return { post, close: () => agent.close() };
}

/** The first RESPONSE_KEEP_HEADERS of an answer's headers, each value cut to HEADER_KEEP_CHARS (repeated ones joined by ", "). */
function keptHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers).slice(0, RESPONSE_KEEP_HEADERS)) {
    if (value === undefined) continue;
    kept[name.slice(0, HEADER_KEEP_CHARS)] = (Array.isArray(value) ? value.join(', ') : value).slice(0, HEADER_KEEP_CHARS);
  }
  return kept;
}

/** Reads up to `limit` bytes of a body as text and drops the rest. */
async function firstBytes(body: AsyncIterable<Buffer> & { destroy(): unknown }, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= limit) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}

/** `Retry-After` in milliseconds from now: delay-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfter(value: string | string[] | undefined, now = Date.now()): number | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return null;
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

function reasonOf(err: unknown, timeout: AbortSignal, timeoutMs: number): string {
  const codes = errorCodes(err);
  if (timeout.aborted || codes.includes('UND_ERR_HEADERS_TIMEOUT') || codes.includes('UND_ERR_BODY_TIMEOUT')) return `timed out after ${timeoutMs / 1000} s`;
  if (codes.includes('ERR_INVALID_URL')) return 'invalid URL';
  return networkFailure(err) ?? 'network error';
}
