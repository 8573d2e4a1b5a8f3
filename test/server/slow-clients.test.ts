import net from 'node:net';
import { expect } from 'chai';
import { tempDir } from '../helpers/harness.js';
import { installEnv } from '../helpers/databases.js';
import { startProcess, type ServerProcess } from '../helpers/process.js';
import { provision } from '../helpers/provision.js';

/** Sends `head` (and then nothing more) on a raw connection; resolves with what the server answered and when the connection ended. */
function rawRequest(url: string, head: string, waitMs: number): Promise<{ status: string; body: string; closed: boolean; ms: number }> {
  const { port, hostname } = new URL(url);
  const started = Date.now();
  return new Promise((resolve) => {
    let data = '';
    const socket = net.connect(Number(port), hostname, () => socket.write(head));
    const done = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      const [status = '', ...rest] = data.split('\r\n');
      resolve({ status, body: rest.join('\r\n').split('\r\n\r\n').slice(1).join('\r\n\r\n'), closed, ms: Date.now() - started });
    };
    socket.on('data', (chunk) => (data += chunk));
    socket.on('close', () => done(true));
    socket.on('error', () => undefined);
    const timer = setTimeout(() => done(false), waitMs);
  });
}

describe('slow and oversized clients (a server that faces the internet)', function () {
  this.timeout(60_000);
  let server: ServerProcess;
  let key: string;

  before(async () => {
    const dataDir = tempDir();
    const provisioned = await provision(dataDir);
    key = provisioned.key;
    await provisioned.close();
    server = await startProcess('src/main.ts', { ...(await installEnv(dataDir)), HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_REQUEST_TIMEOUT_MS: '2000' });
  });
  after(async () => {
    server.child.kill('SIGTERM');
    await server.exited;
  });

  const declared = (path: string, headers = '') =>
    `POST ${path} HTTP/1.1\r\nHost: scribe\r\n${headers}Content-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n0123456789`;

  it('answers 413 "Request body too large" at once when Content-Length says more than 1 MiB, and hangs up', async () => {
    const res = await rawRequest(server.url, declared('/api/v1/scribes/atlas/requests', `X-Api-Key: ${key}\r\n`), 5000);
    expect(res.status).to.equal('HTTP/1.1 413 Payload Too Large');
    expect(JSON.parse(res.body)).to.deep.equal({ error: 'Request body too large' });
    expect(res.closed).to.equal(true);
    expect(res.ms).to.be.lessThan(1000);
  });

  it('answers 413 in form B under /api/v1/entry_types, and with the error page in the console', async () => {
    const entries = await rawRequest(server.url, declared('/api/v1/entry_types/x/entries', `X-Api-Key: ${key}\r\n`), 5000);
    expect(entries.status).to.equal('HTTP/1.1 413 Payload Too Large');
    expect(JSON.parse(entries.body)).to.deep.equal({ data: null, meta: {}, error: 'Request body too large' });
    const login = await rawRequest(server.url, declared('/login').replace('application/json', 'application/x-www-form-urlencoded'), 5000);
    expect(login.status).to.equal('HTTP/1.1 413 Payload Too Large');
    expect(login.body).to.include('Request body too large');
    expect(login.closed).to.equal(true);
  });

  it('disconnects a client that never finishes its headers, with 408, after HTTP_HEADERS_TIMEOUT_MS', async () => {
    const res = await rawRequest(server.url, `GET /healthz HTTP/1.1\r\nHost: scribe\r\nX-Slow: `, 10_000);
    expect(res.closed).to.equal(true);
    expect(res.status).to.equal('HTTP/1.1 408 Request Timeout');
    expect(res.ms).to.be.within(900, 4000);
  });

  it('disconnects a client that never finishes its body, with 408, after HTTP_REQUEST_TIMEOUT_MS', async () => {
    const head = `POST /api/v1/scribes/atlas/requests HTTP/1.1\r\nHost: scribe\r\nX-Api-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"task":`;
    const res = await rawRequest(server.url, head, 10_000);
    expect(res.closed).to.equal(true);
    expect(res.status).to.equal('HTTP/1.1 408 Request Timeout');
    expect(res.ms).to.be.within(1900, 5000);
  });
});
