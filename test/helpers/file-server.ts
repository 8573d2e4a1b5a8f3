import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FileServer {
  url: string;
  port: number;
  hits: string[];
  close(): Promise<void>;
}

type Route = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A real HTTP server on loopback that answers from a table of routes. */
export async function startFileServer(routes: Record<string, Route>): Promise<FileServer> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    hits.push(path);
    const route = routes[path];
    if (route) return route(req, res);
    res.writeHead(404).end('missing');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    hits,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
