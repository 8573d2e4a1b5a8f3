import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Agent, type Dispatcher, interceptors } from 'undici';
import { followingRedirects, leanFetch } from '../../src/net/lean-fetch.js';
import { eventually } from '../helpers/harness.js';

/** A local server that answers each request with what `answer` does, and notes what it was sent. */
async function server(answer: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void) {
  const seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string }> = [];
  const closed: string[] = [];
  const s = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      res.on('close', () => !res.writableFinished && closed.push(req.url!));
      answer(req, res, body);
    });
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`,
    seen,
    closed,
    close: () => {
      s.closeAllConnections();
      return new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
}

describe('leanFetch (fetch over undici request, for model endpoints)', () => {
  const fetchers: Array<{ close(): Promise<void> }> = [];
  const make = (dispatcher: Dispatcher = new Agent(), redirects?: Dispatcher) => {
    const f = leanFetch(dispatcher, redirects);
    fetchers.push(f);
    return f;
  };
  afterEach(async () => {
    await Promise.all(fetchers.splice(0).map((f) => f.close()));
  });

  it('sends the method, headers and body, and answers with the status, every header and the body', async () => {
    const s = await server((_req, res) => {
      res.setHeader('set-cookie', ['a=1', 'b=2']);
      res.writeHead(201, { 'content-type': 'application/json', 'x-request-id': 'r1' }).end('{"ok":true}');
    });
    try {
      const res = await make()(`${s.url}/v1/chat/completions`, {
        method: 'POST',
        headers: new Headers({ authorization: 'Bearer k', 'content-type': 'application/json' }),
        body: '{"q":1}',
      });
      expect(res.status).to.equal(201);
      expect(res.ok).to.equal(true);
      expect(res.headers.get('x-request-id')).to.equal('r1');
      expect(res.headers.getSetCookie()).to.deep.equal(['a=1', 'b=2']);
      expect(await res.json()).to.deep.equal({ ok: true });
      expect(s.seen).to.have.length(1);
      expect(s.seen[0]).to.deep.include({ method: 'POST', url: '/v1/chat/completions', body: '{"q":1}' });
      expect(s.seen[0]!.headers).to.include({ authorization: 'Bearer k', 'content-type': 'application/json' });
      // No compression is asked for, so none needs undoing.
      expect(s.seen[0]!.headers['accept-encoding']).to.equal(undefined);
    } finally {
      await s.close();
    }
  });

  it('hands over a streamed body as it comes, and a bodiless status with no body', async () => {
    let release!: () => void;
    const s = await server((req, res) => {
      if (req.url === '/empty') return void res.writeHead(204).end();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
      release = () => res.end('data: 2\n\n');
    });
    try {
      const f = make();
      expect((await f(`${s.url}/empty`)).body).to.equal(null);
      const res = await f(`${s.url}/stream`);
      // undici's own body, not a web stream around it.
      expect(res.body).to.not.be.instanceOf(ReadableStream);
      const reader = res.body![Symbol.asyncIterator]();
      const first = await reader.next();
      expect(Buffer.from(first.value!).toString()).to.equal('data: 1\n\n');
      expect(res.bodyUsed).to.equal(true);
      release();
      let rest = '';
      for (let part = await reader.next(); !part.done; part = await reader.next()) rest += Buffer.from(part.value).toString();
      expect(rest).to.equal('data: 2\n\n');
    } finally {
      await s.close();
    }
  });

  it('aborts the call when its signal does, mid-body too, and the server sees the connection go', async () => {
    const s = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
    });
    try {
      const controller = new AbortController();
      const res = await make()(`${s.url}/held`, { signal: controller.signal });
      const reader = res.body![Symbol.asyncIterator]();
      await reader.next();
      controller.abort();
      const error = await reader.next().then(
        () => undefined,
        (err: Error) => err,
      );
      expect(error?.name).to.equal('AbortError');
      // The server hears of it once its socket closes, which a busy machine may take a while to tell.
      await eventually(async () => (s.closed.length > 0 ? true : undefined));
      expect(s.closed).to.deep.equal(['/held']);
      const before = new AbortController();
      before.abort();
      const refused = await make()(`${s.url}/never`, { signal: before.signal }).catch((err: Error) => err);
      expect((refused as Error).name).to.equal('AbortError');
      expect(s.seen.map((r) => r.url)).to.deep.equal(['/held']);
    } finally {
      await s.close();
    }
  });

  it('refuses a redirect as fetch with redirect "error" does; followingRedirects follows one, body and all', async () => {
    const s = await server((req, res, body) => {
      if (req.url === '/moved') return void res.writeHead(307, { location: '/here' }).end();
      res.writeHead(200).end(`${req.method} ${body}`);
    });
    try {
      const refused = await make()(`${s.url}/moved`, { method: 'POST', body: 'x' }).catch((err: Error) => err);
      expect(refused).to.be.instanceOf(TypeError);
      expect((refused as TypeError).message).to.equal('fetch failed');
      expect(s.seen.map((r) => r.url)).to.deep.equal(['/moved']);
      const followed = await make(followingRedirects())(`${s.url}/moved`, { method: 'POST', body: 'x' });
      expect(followed.status).to.equal(200);
      expect(await followed.text()).to.equal('POST x');
      expect(s.seen.map((r) => r.url)).to.deep.equal(['/moved', '/moved', '/here']);
    } finally {
      await s.close();
    }
  });

  it('sends a redirected call again through `redirects`, which follows it, and every other call only directly', async () => {
    const s = await server((req, res, body) => {
      if (req.url === '/moved') return void res.writeHead(308, { location: '/here' }).end();
      res.writeHead(200).end(`${req.method} ${req.url} ${body}`);
    });
    /** The requests that reached the redirect-following dispatcher. */
    const followedVia: string[] = [];
    class Counting extends Agent {
      override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
        followedVia.push(options.path);
        return super.dispatch(options, handler);
      }
    }
    try {
      const f = make(new Agent(), new Counting().compose(interceptors.redirect({ maxRedirections: 5 })));
      const direct = await f(`${s.url}/here`, { method: 'POST', body: 'a' });
      expect(await direct.text()).to.equal('POST /here a');
      expect(followedVia).to.deep.equal([]);
      const moved = await f(`${s.url}/moved`, { method: 'POST', body: 'b' });
      expect(moved.status).to.equal(200);
      expect(await moved.text()).to.equal('POST /here b');
      expect(followedVia).to.deep.equal(['/moved', '/here']);
      expect(s.seen.map((r) => `${r.method} ${r.url} ${r.body}`)).to.deep.equal(['POST /here a', 'POST /moved b', 'POST /moved b', 'POST /here b']);
    } finally {
      await s.close();
    }
  });

  it('refuses a Request and a body it cannot send as is, sending nothing', async () => {
    const s = await server((_req, res) => res.end());
    try {
      const f = make();
      const request = await f(new Request(s.url)).catch((err: Error) => err);
      expect((request as Error).message).to.equal('a lean fetch takes a URL, not a Request');
      const form = await f(s.url, { method: 'POST', body: new FormData() }).catch((err: Error) => err);
      expect((form as Error).message).to.equal('a lean fetch sends a string or bytes');
      expect(s.seen).to.deep.equal([]);
    } finally {
      await s.close();
    }
  });
});
