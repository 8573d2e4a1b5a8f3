import path from 'node:path';
import { expect } from 'chai';
import { openDatabase } from '../../src/db/knex.js';
import { eventually, tempDir } from '../helpers/harness.js';
import { runToExit, startProcess } from '../helpers/process.js';
import { startFileServer } from '../helpers/file-server.js';
import { provision } from '../helpers/provision.js';

describe('the server process', function () {
  this.timeout(60_000);

  it('migrates a fresh data dir, serves, and stops on SIGTERM after finishing in-flight requests', async () => {
    const dataDir = tempDir();
    const { key, close } = await provision(dataDir);
    await close();
    // A file that takes 400 ms to arrive keeps the submit in flight while SIGTERM lands.
    const files = await startFileServer({
      '/slow.txt': (_req, res) => setTimeout(() => res.writeHead(200).end('late but here'), 400),
    });
    const server = await startProcess('src/main.ts', { DATA_DIR: dataDir, ATTACHMENTS_ALLOW_PRIVATE: 'true' });
    try {
      expect((await fetch(`${server.url}/healthz`)).status).to.equal(200);
      const inFlight = fetch(`${server.url}/api/v1/scribes/atlas/requests`, {
        method: 'POST',
        headers: { 'X-Api-Key': key, 'Content-Type': 'application/json' },
        body: JSON.stringify({ task: { summary: 'in flight', attachments: [{ url: `${files.url}/slow.txt`, content_type: 'text/plain' }] } }),
      });
      await new Promise((resolve) => setTimeout(resolve, 150));
      server.child.kill('SIGTERM');
      const res = await inFlight;
      expect(res.status).to.equal(202);
      const { request } = (await res.json()) as { request: { id: string } };
      expect(await server.exited).to.equal(0);

      const db = openDatabase(path.join(dataDir, 'scribe.sqlite'));
      try {
        expect(await db('requests').where({ id: request.id }).first()).to.not.equal(undefined);
      } finally {
        await db.destroy();
      }
    } finally {
      server.child.kill('SIGKILL');
      await files.close();
    }
  });

  it('fulfils, after a restart, a receipt a crashed process left dispatched, exactly once', async () => {
    const dataDir = tempDir();
    const { db, services, key, scribe, close } = await provision(dataDir);
    const receipt = await services.requests.submit(scribe, { task: { summary: 'orphaned' } });
    // What a process that died mid-dispatch leaves behind: claimed, lease already run out.
    await db('requests').where({ id: receipt.id }).update({ status: 'dispatched', claim_token: '00000000-0000-7000-8000-000000000000', attempts: 1, available_at: '2000-01-01T00:00:00.000Z' });
    await close();

    const server = await startProcess('src/main.ts', { DATA_DIR: dataDir });
    try {
      const fulfilled = await eventually(async () => {
        const res = await fetch(`${server.url}/api/v1/requests/${receipt.id}`, { headers: { 'X-Api-Key': key } });
        const { request } = (await res.json()) as { request: { status: string; entity_id: string } };
        return request.status === 'fulfilled' ? request : undefined;
      }, 5000);
      server.child.kill('SIGTERM');
      expect(await server.exited).to.equal(0);
      const check = openDatabase(path.join(dataDir, 'scribe.sqlite'));
      try {
        const tasks = await check('tasks').where({ request_id: receipt.id });
        expect(tasks.map((t) => t.id)).to.deep.equal([fulfilled.entity_id]);
      } finally {
        await check.destroy();
      }
    } finally {
      server.child.kill('SIGKILL');
    }
  });

  it('refuses to start with a bad variable, naming it', async () => {
    for (const [name, value] of [['PORT', 'http'], ['LOG_LEVEL', 'loud'], ['ATTACHMENTS_ALLOW_PRIVATE', 'maybe'], ['RATE_LIMIT_PER_MINUTE', '-1']]) {
      const { code, output } = await runToExit('src/main.ts', { DATA_DIR: tempDir(), [name!]: value! });
      expect(code, name).to.equal(1);
      expect(output, name).to.include(`Invalid configuration: ${name}`);
    }
  });

  it('npm run demo seeds once, prints the key and login, and serves them', async () => {
    const dataDir = tempDir();
    const counts = async () => {
      const db = openDatabase(path.join(dataDir, 'scribe.sqlite'));
      try {
        const tables = ['organizations', 'api_keys', 'users', 'scribes', 'requests', 'entry_types', 'entries'];
        return Object.fromEntries(await Promise.all(tables.map(async (t) => [t, Number((await db(t).count({ n: '*' }).first())!.n)])));
      } finally {
        await db.destroy();
      }
    };
    let first: Record<string, number> | undefined;
    for (let run = 0; run < 2; run++) {
      const demo = await startProcess('src/demo.ts', { DATA_DIR: dataDir });
      try {
        await eventually(async () => (demo.output().includes('Console login:') ? true : undefined));
        const key = /API key:\s+(\S+)/.exec(demo.output())![1]!;
        expect(demo.output()).to.match(/Console login:\s+\S+@\S+ \/ \S+/);
        const res = await fetch(`${demo.url}/api/v1/scribes/atlas/requests`, { headers: { 'X-Api-Key': key } });
        expect(res.status).to.equal(200);
        const body = (await res.json()) as { requests: unknown[] };
        expect(body.requests.length).to.equal(3);
      } finally {
        demo.child.kill('SIGTERM');
        expect(await demo.exited).to.equal(0);
      }
      const now = await counts();
      if (first) expect(now, 'a second run adds nothing').to.deep.equal(first);
      first = now;
    }
    expect(first).to.deep.equal({ organizations: 1, api_keys: 1, users: 1, scribes: 3, requests: 3, entry_types: 2, entries: 355 });
  });
});
