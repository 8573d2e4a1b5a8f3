import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { startFileServer, type FileServer } from '../helpers/file-server.js';

const PDF = Buffer.from('%PDF-1.4 pretend this is a document\n');
const MiB = 1024 * 1024;

/** Every file under the attachments folder (temp files included). */
function storedFiles(dir: string): string[] {
  const root = path.join(dir, 'attachments');
  if (!fs.existsSync(root)) return [];
  return fs
    .readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => e.name);
}

describe('attachments on POST .../requests', () => {
  let files: FileServer;
  let h: Harness;
  let t: Tenant;

  /** Downloads of /slow open at once, and the most seen open together. */
  const slow = { open: 0, most: 0 };

  before(async () => {
    files = await startFileServer({
      '/report.pdf': (_req, res) => res.writeHead(200, { 'content-type': 'application/pdf' }).end(PDF),
      '/notes.txt': (_req, res) => res.writeHead(200).end('some notes'),
      '/slow': (req) => {
        // Never answers: the download times out and its connection closes.
        slow.most = Math.max(slow.most, ++slow.open);
        req.socket.once('close', () => slow.open--);
      },
      '/slow-body': (_req, res) => {
        res.writeHead(200);
        res.write('partial');
      },
      '/huge': (_req, res) => {
        res.writeHead(200, { 'content-length': String(26 * MiB) });
        res.end(Buffer.alloc(26 * MiB));
      },
      '/huge-chunked': (_req, res) => {
        res.writeHead(200);
        const chunk = Buffer.alloc(MiB);
        let sent = 0;
        const pump = () => {
          while (sent < 26 && res.write(chunk)) sent++;
          if (sent < 26) res.once('drain', pump);
          else res.end();
        };
        pump();
      },
      '/to-report': (_req, res) => res.writeHead(302, { location: '/report.pdf' }).end(),
      '/to-loopback-alias': (_req, res) => res.writeHead(302, { location: `http://127.0.0.2:${files.port}/report.pdf` }).end(),
      '/loop': (_req, res) => res.writeHead(302, { location: '/loop' }).end(),
      '/to-ftp': (_req, res) => res.writeHead(301, { location: 'ftp://example.com/x' }).end(),
      '/to-nowhere': (_req, res) => res.writeHead(302).end(),
    });
    // Loopback is refused in production; here only 127.0.0.1 (the file server) is let through,
    // so a redirect to any other address shows the check on every hop.
    h = await createHarness({
      options: { dispatchOnAccept: false, addressPolicy: (a) => a === '127.0.0.1', downloadLimits: { timeoutMs: 300 } },
    });
    t = await h.tenant();
  });
  after(async () => {
    await h.close();
    await files.close();
  });

  const submit = (attachments: unknown[], on = { h, t }) =>
    on.h.api
      .post('/api/v1/scribes/atlas/requests')
      .set(on.t.headers)
      .send({ task: { summary: 'with files', attachments } });

  async function expectDownloadFailure(attachments: unknown[], reason: string, on = { h, t }) {
    const requestsBefore = await on.h.db('requests').count({ n: '*' }).first();
    const res = await submit(attachments, on);
    expect(res.status, JSON.stringify(attachments)).to.equal(422);
    expect(res.body).to.deep.equal({ error: `Attachment download failed: ${reason}` });
    expect(await on.h.db('requests').count({ n: '*' }).first(), 'no receipt').to.deep.equal(requestsBefore);
    expect(
      storedFiles(on.h.dir).filter((name) => !hashesKept.has(name)),
      'no file left behind',
    ).to.deep.equal([]);
  }
  const hashesKept = new Set<string>();

  it('downloads each file, stores it content-addressed and records it with the receipt', async () => {
    const res = await submit([
      { url: `${files.url}/report.pdf`, content_type: 'application/pdf' },
      { url: `${files.url}/notes.txt`, content_type: 'text/plain', filename: '../../etc/passwd' },
      { url: `${files.url}/to-report`, content_type: 'application/pdf' },
    ]);
    expect(res.status).to.equal(202);
    const rows = await h.db('attachments').where({ request_id: res.body.request.id }).orderBy('position');
    const sha = createHash('sha256').update(PDF).digest('hex');
    expect(rows.map((r) => [r.position, r.filename, r.content_type, r.size_bytes])).to.deep.equal([
      [0, 'report.pdf', 'application/pdf', PDF.length],
      [1, '_.._etc_passwd', 'text/plain', 10],
      [2, 'report.pdf', 'application/pdf', PDF.length],
    ]);
    expect(rows[0].sha256).to.equal(sha);
    expect(rows[2].sha256).to.equal(sha);
    const stored = h.services.attachmentStore.pathFor(sha);
    expect(fs.readFileSync(stored)).to.deep.equal(PDF);
    for (const row of rows) hashesKept.add(row.sha256);
    expect(storedFiles(h.dir).sort()).to.deep.equal([...hashesKept].sort());
  });

  it('fails with "HTTP 404" for a missing file', () => expectDownloadFailure([{ url: `${files.url}/missing.pdf`, content_type: 'application/pdf' }], 'HTTP 404'));

  it('fails with a timeout when the server does not answer', () => expectDownloadFailure([{ url: `${files.url}/slow`, content_type: 'text/plain' }], 'timed out after 0.3s'));

  it('fails with a timeout when the body stalls', () => expectDownloadFailure([{ url: `${files.url}/slow-body`, content_type: 'text/plain' }], 'timed out after 0.3s'));

  it('fails a file declared larger than 25 MiB before reading it', () =>
    expectDownloadFailure([{ url: `${files.url}/huge`, content_type: 'application/octet-stream' }], 'file exceeds 25 MiB limit'));

  it('fails a file that streams past 25 MiB without declaring its size', async () => {
    // Streaming 25 MiB can take longer than the 0.3 s the other tests allow on a loaded machine.
    const patient = await createHarness({ options: { dispatchOnAccept: false, addressPolicy: (a) => a === '127.0.0.1', downloadLimits: { timeoutMs: 20_000 } } });
    try {
      const on = { h: patient, t: await patient.tenant() };
      await expectDownloadFailure([{ url: `${files.url}/huge-chunked`, content_type: 'application/octet-stream' }], 'file exceeds 25 MiB limit', on);
    } finally {
      await patient.close();
    }
  });

  it('refuses a redirect to an address the policy does not allow', () =>
    expectDownloadFailure([{ url: `${files.url}/to-loopback-alias`, content_type: 'application/pdf' }], 'address not allowed'));

  it('gives up after 5 redirects', () => expectDownloadFailure([{ url: `${files.url}/loop`, content_type: 'text/plain' }], 'too many redirects'));

  it('fails "unsupported URL scheme" for a non-http URL, directly or by redirect', async () => {
    await expectDownloadFailure([{ url: 'ftp://example.com/file.txt', content_type: 'text/plain' }], 'unsupported URL scheme');
    await expectDownloadFailure([{ url: 'file:///etc/passwd', content_type: 'text/plain' }], 'unsupported URL scheme');
    await expectDownloadFailure([{ url: `${files.url}/to-ftp`, content_type: 'text/plain' }], 'unsupported URL scheme');
  });

  it('fails "invalid URL" for something that is not a URL', async () => {
    await expectDownloadFailure([{ url: 'not a url', content_type: 'text/plain' }], 'invalid URL');
    await expectDownloadFailure([{ url: '/relative/path.txt', content_type: 'text/plain' }], 'invalid URL');
  });

  it('fails "connection refused" when nothing listens', async () => {
    const closed = await startFileServer({});
    const url = `${closed.url}/x`;
    await closed.close();
    await expectDownloadFailure([{ url, content_type: 'text/plain' }], 'connection refused');
  });

  it('fails a redirect without a Location', () => expectDownloadFailure([{ url: `${files.url}/to-nowhere`, content_type: 'text/plain' }], 'HTTP 302 without Location'));

  it('stores nothing when one of several attachments fails', async () => {
    await expectDownloadFailure(
      [
        { url: `${files.url}/notes.txt?fresh=1`, content_type: 'text/plain' },
        { url: `${files.url}/missing`, content_type: 'text/plain' },
      ],
      'HTTP 404',
    );
  });

  it('fetches the attachments of one request concurrently', async () => {
    slow.most = 0;
    const res = await submit([
      { url: `${files.url}/slow`, content_type: 'text/plain' },
      { url: `${files.url}/slow?2`, content_type: 'text/plain' },
      { url: `${files.url}/slow?3`, content_type: 'text/plain' },
    ]);
    expect(res.status).to.equal(422);
    // One after another, each would have timed out and closed before the next opened.
    expect(slow.most, 'downloads open at once').to.equal(3);
  });
});

describe('attachment address checks with the production policy', () => {
  let files: FileServer;
  let h: Harness;
  let t: Tenant;
  before(async () => {
    files = await startFileServer({ '/ok': (_req, res) => res.writeHead(200).end('ok') });
    h = await createHarness({ options: { dispatchOnAccept: false } });
    t = await h.tenant();
  });
  after(async () => {
    await h.close();
    await files.close();
  });

  const refusedUrls = () => [
    `${files.url}/ok`,
    `http://localhost:${files.port}/ok`,
    `http://[::1]:${files.port}/ok`,
    `http://0x7f000001:${files.port}/ok`,
    'http://169.254.169.254/latest/meta-data/',
    'http://10.0.0.1/x',
    'http://192.168.1.1/x',
    'http://[::ffff:127.0.0.1]/x',
    'http://0.0.0.0/x',
    // IPv6 forms that carry a loopback or private IPv4 address.
    `http://[::127.0.0.1]:${files.port}/ok`,
    `http://[::ffff:0:127.0.0.1]:${files.port}/ok`,
    `http://[64:ff9b::127.0.0.1]:${files.port}/ok`,
    `http://[2002:7f00:1::]:${files.port}/ok`,
    `http://[2001:0:7f00:1::1]:${files.port}/ok`,
  ];

  it('refuses loopback, private, link-local and unspecified addresses, by IP or by name', async () => {
    for (const url of refusedUrls()) {
      const res = await h.api
        .post('/api/v1/scribes/atlas/requests')
        .set(t.headers)
        .send({ task: { summary: 'x', attachments: [{ url, content_type: 'text/plain' }] } });
      expect(res.status, url).to.equal(422);
      expect(res.body, url).to.deep.equal({ error: 'Attachment download failed: address not allowed' });
    }
    expect(files.hits, 'the server was never reached').to.deep.equal([]);
  });

  it('lets them through with ATTACHMENTS_ALLOW_PRIVATE=true', async () => {
    const open = await createHarness({ env: { ATTACHMENTS_ALLOW_PRIVATE: 'true' }, options: { dispatchOnAccept: false } });
    try {
      const tenant = await open.tenant();
      const res = await open.api
        .post('/api/v1/scribes/atlas/requests')
        .set(tenant.headers)
        .send({ task: { summary: 'x', attachments: [{ url: `http://localhost:${files.port}/ok`, content_type: 'text/plain' }] } });
      expect(res.status).to.equal(202);
      expect(files.hits).to.deep.equal(['/ok']);
    } finally {
      await open.close();
    }
  });
});
