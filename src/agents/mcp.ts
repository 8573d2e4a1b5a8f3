import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { AddressPolicy } from '../net/address-policy.js';
import { createGuardedFetch, networkFailure } from '../net/guarded-agent.js';
import type { McpServerRow } from './queries.js';
import type { Trace } from './trace.js';
import { cutNoted } from '../lib/text.js';

export interface McpLimits {
  /** Connecting and listing a server's tools. */
  connectTimeoutMs: number;
  /** One tool call. */
  callTimeoutMs: number;
  /** The most of a tool's result given back to the model. */
  resultChars: number;
}

export const messages = {
  /** Before what a tool said of its failure, or why its call failed, as the model is given it. */
  toolFailed: 'the tool failed: ',
};

export const defaultMcpLimits: McpLimits = { connectTimeoutMs: 10_000, callTimeoutMs: 30_000, resultChars: 16_000 };

/** A tool of an MCP server, under the name the model is given (`<server>_<tool>`, unique in the work). */
export interface McpTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  /** Ends, rejecting, when `signal` aborts: the MCP server is told the call is cancelled. */
  call(args: Record<string, unknown>, signal: AbortSignal): Promise<unknown>;
}

export interface McpToolset {
  tools: McpTool[];
  close(): Promise<void>;
}

export type McpConnector = (servers: readonly McpServerRow[], trace: Trace) => Promise<McpToolset>;

/**
 * The SDK's client, loaded at the first connection rather than at every start: with the schema
 * validators it brings, it is a large share of a process's start, and most installs never use it.
 */
async function importSdk() {
  const [{ Client }, { StreamableHTTPClientTransport }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ]);
  return { Client, StreamableHTTPClientTransport };
}
let sdk: ReturnType<typeof importSdk> | undefined;
const loadSdk = () => (sdk ??= importSdk());

/**
 * Connects to a scribe's MCP servers through the official SDK's Streamable HTTP client, for one
 * piece of work. Requests go through the guarded agent, so a server URL obeys the address
 * policy at connect time. A server that cannot be reached or listed gives no tools, and the
 * trace says why; the work goes on without them.
 */
export function createMcpConnector(policy: AddressPolicy, limits: McpLimits = defaultMcpLimits): McpConnector & { close(): Promise<void> } {
  const guardedFetch = createGuardedFetch(policy);

  async function connectOne(server: McpServerRow, index: number, trace: Trace): Promise<{ client: Client; tools: McpTool[] } | undefined> {
    const started = performance.now();
    const { Client, StreamableHTTPClientTransport } = await loadSdk();
    const client = new Client({ name: 'scribe', version: '1.0.0' });
    try {
      const transport = new StreamableHTTPClientTransport(new URL(server.url), { fetch: guardedFetch, requestInit: { headers: server.headers } });
      await withTimeout(client.connect(transport, { timeout: limits.connectTimeoutMs }), limits.connectTimeoutMs);
      const { tools } = await client.listTools(undefined, { timeout: limits.connectTimeoutMs });
      const prefix = `mcp${index + 1}`;
      const taken = new Set<string>();
      return {
        client,
        tools: tools.map((tool) => ({
          name: uniqueName(`${prefix}_${tool.name}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64), taken),
          description: `${tool.description ?? tool.name} (a tool of ${new URL(server.url).host})`,
          parameters: tool.inputSchema as Record<string, unknown>,
          call: (args, signal) => callTool(client, tool.name, args, signal),
        })),
      };
    } catch (err) {
      await client.close().catch(() => {});
      trace.record({
        kind: 'tool',
        name: 'mcp_list_tools',
        arguments: { server: server.url },
        durationMs: performance.now() - started,
        error: `MCP server ${server.url} is unavailable (${reasonOf(err)}); its tools were not offered`,
      });
      return undefined;
    }
  }

  async function callTool(client: Client, name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<unknown> {
    const result = await client.callTool({ name, arguments: args }, undefined, { timeout: limits.callTimeoutMs, signal });
    const text =
      (result.content as Array<{ type: string; text?: string }> | undefined)?.map((part) => (part.type === 'text' ? (part.text ?? '') : `[${part.type} content]`)).join('\n') ??
      JSON.stringify(result.structuredContent ?? null);
    const kept = cutNoted(text, limits.resultChars);
    return result.isError ? { error: `${messages.toolFailed}${kept}` } : { result: kept };
  }

  const connect: McpConnector = async (servers, trace) => {
    const connected = (await Promise.all(servers.map((server, i) => connectOne(server, i, trace)))).filter((c) => c !== undefined);
    return {
      tools: connected.flatMap((c) => c.tools),
      close: async () => {
        await Promise.all(connected.map((c) => c.client.close().catch(() => {})));
      },
    };
  };
  return Object.assign(connect, { close: () => guardedFetch.close() });
}

/**
 * A tool's name as the model is given it, made unique among its server's: the names the model
 * may use are fewer than a server's (`a.b` and `a_b` both become `a_b`), and the second would
 * otherwise hide the first. A taken name gets `_2`, `_3`, … within the 64 characters allowed.
 */
function uniqueName(name: string, taken: Set<string>): string {
  let unique = name;
  for (let n = 2; taken.has(unique); n++) unique = `${name.slice(0, 64 - `_${n}`.length)}_${n}`;
  taken.add(unique);
  return unique;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([promise, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms / 1000} s`)), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}

/** Why a server could not be used, in a few words; never its headers. */
function reasonOf(err: unknown): string {
  const failure = networkFailure(err);
  if (failure) return failure;
  // The SDK may wrap fetch's error without its cause; its message still says what happened.
  const message = (err as Error)?.message ?? String(err);
  if (/ECONNREFUSED|fetch failed/i.test(message)) return 'connection refused';
  return message.slice(0, 200);
}
