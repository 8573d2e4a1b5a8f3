import dns from 'node:dns';
import net from 'node:net';
import { Agent, fetch as undiciFetch } from 'undici';
import type { AddressPolicy } from './address-policy.js';
import { type ClosableFetch, type FetchAnswer, leanFetch } from './lean-fetch.js';

/** The error code of a connection the address policy refused (see `isRefusedAddress`). */
const REFUSED = 'ESCRIBE_ADDRESS_NOT_ALLOWED';

/**
 * An undici Agent for user-supplied URLs (attachments, outbound webhooks) that connects only
 * to addresses the policy allows. Host names are checked at connect time, after DNS, so a
 * name that resolves to a public address when the URL was saved and to a private one later
 * (DNS rebinding) is refused; IP literals skip DNS, so callers check them with
 * `checkLiteralAddress` before each request.
 */
export function createGuardedAgent(policy: AddressPolicy, options: Agent.Options = {}): Agent {
  return new Agent({ ...options, connect: { ...(options.connect as object), lookup: guardedLookup(policy) } });
}

/** A `fetch` that obeys the address policy, with `close()` to release its sockets. */
export type GuardedFetch = ClosableFetch;

/**
 * A `fetch` for user-supplied URLs (MCP servers): IP literals are checked before each request
 * and host names at connect time (`createGuardedAgent`). Redirects are refused: one could lead
 * to an IP literal that no lookup would check.
 */
export function createGuardedFetch(policy: AddressPolicy): GuardedFetch {
  return guarded(policy, (agent) => (url, init) => undiciFetch(url, { ...(init as object), redirect: 'error', dispatcher: agent }) as unknown as Promise<Response>);
}

/** The same, lean (net/lean-fetch.ts): for a scribe's model endpoint and its many small calls; it refuses redirects too. */
export function createGuardedLeanFetch(policy: AddressPolicy): ClosableFetch<FetchAnswer> {
  return guarded(policy, (agent) => leanFetch(agent));
}

/** `send`, made once with a guarded agent, after each URL's IP literal is checked. */
function guarded<Answer extends FetchAnswer>(policy: AddressPolicy, sendVia: (agent: Agent) => (url: string | URL, init?: RequestInit) => Promise<Answer>): ClosableFetch<Answer> {
  let agent: Agent | undefined;
  let send: ((url: string | URL, init?: RequestInit) => Promise<Answer>) | undefined;
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Answer> => {
    // The SDKs that use it pass a URL and an init; a Request's own method and body would be lost here.
    if (input instanceof Request) throw new TypeError('a guarded fetch takes a URL, not a Request');
    checkLiteralAddress(new URL(input), policy);
    agent ??= createGuardedAgent(policy);
    send ??= sendVia(agent);
    return send(input, init);
  };
  return Object.assign(fetch, { close: async () => agent?.close() });
}

/** Throws (an error `isRefusedAddress` knows) when the URL's host is an IP literal the policy refuses. */
export function checkLiteralAddress(url: URL, policy: AddressPolicy): void {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host) && !policy(host)) throw refused(host);
}

/** Whether `err` (or one of its causes, as undici wraps socket errors) is the policy's refusal. */
export function isRefusedAddress(err: unknown): boolean {
  return errorCodes(err).includes(REFUSED);
}

/**
 * Why a connection to a user-supplied URL failed, in the few words the product shows
 * (`address not allowed`, `connection refused`, `host not found`, `TLS error`,
 * `connection reset`), or undefined for anything else. Timeouts are the caller's to word.
 */
export function networkFailure(err: unknown): string | undefined {
  if (isRefusedAddress(err)) return 'address not allowed';
  const codes = errorCodes(err);
  if (codes.includes('ECONNREFUSED')) return 'connection refused';
  if (codes.includes('ENOTFOUND') || codes.includes('EAI_AGAIN')) return 'host not found';
  if (codes.some((code) => code.startsWith('ERR_TLS') || code.includes('CERT'))) return 'TLS error';
  if (codes.includes('ECONNRESET') || codes.includes('UND_ERR_SOCKET')) return 'connection reset';
  return undefined;
}

/** The codes of an error and of its causes. */
export function errorCodes(err: unknown): string[] {
  const codes: string[] = [];
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string') codes.push(e.code);
  }
  return codes;
}

function refused(host: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`${host} resolves to an address that is not allowed`);
  error.code = REFUSED;
  return error;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/** A `dns.lookup` that refuses a host when any of its addresses is refused. */
function guardedLookup(policy: AddressPolicy) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      if (addresses.length === 0 || addresses.some((a) => !policy(a.address))) return callback(refused(hostname), []);
      if (options.all) return callback(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}
