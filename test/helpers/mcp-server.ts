import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/**
 * A real MCP server, built with the official SDK, over Streamable HTTP (stateless), with the
 * tools `add` (two numbers), `weather` (a city), `fail` (which throws), `hang` (which answers
 * only when its call is cancelled, noting when), and `a.b` and `a_b` (two names the model can
 * only be given as one). It records each tool call and the headers of each request.
 */
export async function startMcpServer() {
  const calls: Array<{ tool: string; args: Record<string, unknown> }> = [];
  const headers: http.IncomingHttpHeaders[] = [];
  /** When each `hang` call was cancelled (Date.now()), as the server heard it. */
  const cancelled: number[] = [];

  function server(): McpServer {
    const mcp = new McpServer({ name: 'test-tools', version: '1.0.0' });
    mcp.registerTool('add', { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => {
      calls.push({ tool: 'add', args: { a, b } });
      return { content: [{ type: 'text', text: String(a + b) }] };
    });
    mcp.registerTool('weather', { description: 'The weather in a city', inputSchema: { city: z.string() } }, async ({ city }) => {
      calls.push({ tool: 'weather', args: { city } });
      return { content: [{ type: 'text', text: `Sunny in ${city}, 21 °C` }] };
    });
    mcp.registerTool('fail', { description: 'Always fails' }, async () => {
      calls.push({ tool: 'fail', args: {} });
      throw new Error('kaboom inside the tool');
    });
    mcp.registerTool('hang', { description: 'Never answers' }, async (extra) => {
      calls.push({ tool: 'hang', args: {} });
      await new Promise<void>((resolve) => extra.signal.addEventListener('abort', () => resolve(), { once: true }));
      cancelled.push(Date.now());
      return { content: [{ type: 'text', text: 'cancelled' }] };
    });
    for (const name of ['a.b', 'a_b']) {
      mcp.registerTool(name, { description: `The tool ${name}` }, async () => {
        calls.push({ tool: name, args: {} });
        return { content: [{ type: 'text', text: `ran ${name}` }] };
      });
    }
    return mcp;
  }

  const http_ = http.createServer(async (req, res) => {
    headers.push(req.headers);
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const mcp = server();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http_.listen(0, '127.0.0.1', resolve));
  const { port } = http_.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    calls,
    headers,
    cancelled,
    close: () =>
      new Promise<void>((resolve) => {
        http_.closeAllConnections();
        http_.close(() => resolve());
      }),
  };
}
