import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { spawn } from 'node:child_process';
import { expect } from 'chai';
import type { openDatabase } from '../../src/db/knex.js';
import { eventually, tempDir } from '../helpers/harness.js';
import { stored, installEnv, itOnlyOn, openInstall, tableNames } from '../helpers/databases.js';
import { builtEntry, runToExit, startProcess } from '../helpers/process.js';
import { startFileServer } from '../helpers/file-server.js';
import { provision } from '../helpers/provision.js';
import { runAdmin } from '../helpers/cli.js';
import { startFakeOpenAi } from '../helpers/fake-openai.js';
import { signInByForm } from '../helpers/console.js';

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
    const server = await startProcess('src/main.ts', { ...(await installEnv(dataDir)), ATTACHMENTS_ALLOW_PRIVATE: 'true' });
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

      const db = await openInstall(dataDir);
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
    await db('requests')
      .where({ id: receipt.id })
      .update({ status: 'dispatched', claim_token: '00000000-0000-7000-8000-000000000000', attempts: 1, available_at: '2000-01-01T00:00:00.000Z' });
    await close();

    const server = await startProcess('src/main.ts', { ...(await installEnv(dataDir)) });
    try {
      const fulfilled = await eventually(async () => {
        const res = await fetch(`${server.url}/api/v1/requests/${receipt.id}`, { headers: { 'X-Api-Key': key } });
        const { request } = (await res.json()) as { request: { status: string; entity_id: string } };
        return request.status === 'fulfilled' ? request : undefined;
      }, 5000);
      server.child.kill('SIGTERM');
      expect(await server.exited).to.equal(0);
      const check = await openInstall(dataDir);
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

  describe('agent work in flight', () => {
    /** A data dir whose scribe uses the openai agent against a fake that hangs until told otherwise. */
    async function setUp() {
      const fake = await startFakeOpenAi();
      const dataDir = tempDir();
      const { services, key, scribe, organizationId, close } = await provision(dataDir);
      await services.scribes.setAgent(organizationId, scribe.slug, { agent: 'openai' });
      const env = { ...(await installEnv(dataDir)), OPENAI_BASE_URL: fake.baseUrl, OPENAI_MODEL: 'm', OPENAI_MAX_RETRIES: '0' };
      await close();
      const post = async (url: string, path: string, body: object) =>
        (await fetch(`${url}${path}`, { method: 'POST', headers: { 'X-Api-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify(body) })).json() as Promise<{
          session_id: string;
        }>;
      const read = async <T>(fn: (db: ReturnType<typeof openDatabase>) => Promise<T>) => {
        const db = await openInstall(dataDir);
        try {
          return await fn(db);
        } finally {
          await db.destroy();
        }
      };
      return { fake, env, post, read, slug: scribe.slug };
    }

    it('on SIGTERM stops claiming, lets the answers under way finish, records each once and exits 0', async () => {
      const { fake, env, post, read, slug } = await setUp();
      fake.script({ reply: 'First, after a while.', delayMs: 800 }, { reply: 'Second, after a while.', delayMs: 800 });
      const server = await startProcess('src/main.ts', { ...env, SHUTDOWN_TIMEOUT_MS: '10000' });
      try {
        const ids: string[] = [];
        for (const message of ['one', 'two']) ids.push((await post(server.url, `/api/v1/scribes/${slug}/chat`, { message })).session_id);
        await eventually(async () => (fake.seen.length === 2 ? true : undefined), 5000);
        server.child.kill('SIGTERM');
        expect(await server.exited).to.equal(0);
        const replies = await read((db) => db('session_messages').whereIn('session_id', ids).where({ author: 'scribe' }).orderBy('text').pluck('text'));
        expect(replies).to.deep.equal(['First, after a while.', 'Second, after a while.']);
        expect(await read((db) => db('sessions').whereIn('id', ids).pluck('state'))).to.deep.equal(['waiting', 'waiting']);
      } finally {
        server.child.kill('SIGKILL');
        await fake.close();
      }
    });

    it('hands back, at SHUTDOWN_TIMEOUT_MS, work still running; another process takes it up at once and records it once', async () => {
      const { fake, env, post, read, slug } = await setUp();
      fake.script({ hang: true }, { hang: true });
      const stopping = await startProcess('src/main.ts', { ...env, SHUTDOWN_TIMEOUT_MS: '300' });
      let other: Awaited<ReturnType<typeof startProcess>> | undefined;
      try {
        const sessionId = (await post(stopping.url, `/api/v1/scribes/${slug}/chat`, { message: 'hello' })).session_id;
        await post(stopping.url, `/api/v1/scribes/${slug}/requests`, { task: { summary: 'Work', acceptance_criteria: 'ok' } });
        await eventually(async () => (fake.seen.length === 2 ? true : undefined), 5000);
        // Started once the first holds both, so that all there is to take over is what it hands back.
        other = await startProcess('src/main.ts', env);
        const held = await read(async (db) => ({ session: await db('sessions').where({ id: sessionId }).first(), task: await db('tasks').first() }));
        expect([held.session.state, held.task.status]).to.deep.equal(['running', 'in_progress']);
        // Plain text answers both, whichever the other process asks first.
        fake.script({ reply: 'Taken over.' }, { reply: 'Taken over.' });

        stopping.child.kill('SIGTERM');
        expect(await stopping.exited).to.equal(0);
        const exitedAt = Date.now();
        expect(fake.hits.abandoned, 'the held calls were aborted').to.equal(2);
        await eventually(
          () =>
            read(async (db) => ((await db('tasks').first()).status === 'done' && (await db('sessions').where({ id: sessionId }).first()).state === 'waiting' ? true : undefined)),
          10_000,
        );
        // Well inside the 30-second lease a dead process's work would wait for.
        expect(Date.now() - exitedAt).to.be.below(10_000);
        const after = await read(async (db) => ({
          messages: await db('session_messages').where({ session_id: sessionId }).orderBy('id').select('author', 'text'),
          events: await db('task_events').orderBy('id').pluck('to_status'),
          calls: await db('agent_calls').whereNotNull('task_id').orderBy('id').select('kind', 'error'),
        }));
        expect(after.messages).to.deep.equal([
          { author: 'user', text: 'hello' },
          { author: 'scribe', text: 'Taken over.' },
        ]);
        expect(after.events).to.deep.equal(['open', 'in_progress', 'done']);
        expect(after.calls, 'the handed-back run left no trace of its aborted call').to.deep.equal([{ kind: 'model', error: null }]);
      } finally {
        stopping.child.kill('SIGKILL');
        other?.child.kill('SIGTERM');
        await other?.exited;
        await fake.close();
      }
    });

    it('answers, after a restart, a session and a task a killed process held, each exactly once', async () => {
      const { fake, env, post, read, slug } = await setUp();
      fake.script({ hang: true }, { hang: true });
      const first = await startProcess('src/main.ts', env);
      let sessionId: string;
      try {
        sessionId = (await post(first.url, `/api/v1/scribes/${slug}/chat`, { message: 'hello' })).session_id;
        await post(first.url, `/api/v1/scribes/${slug}/requests`, { task: { summary: 'Work', acceptance_criteria: 'ok' } });
        await eventually(async () => (fake.seen.length === 2 ? true : undefined), 5000);
      } finally {
        first.child.kill('SIGKILL');
        await first.exited;
      }
      const held = await read(async (db) => ({ session: await db('sessions').where({ id: sessionId }).first(), task: await db('tasks').first() }));
      expect(held.session).to.include({ state: 'running', reply_due: stored(true) });
      expect(held.task).to.include({ status: 'in_progress' });
      expect(held.session.claim_token).to.be.a('string');
      // Five minutes pass: the dead process's leases run out.
      await read((db) => Promise.all(['sessions', 'tasks'].map((t) => db(t).update({ lease_until: '2000-01-01T00:00:00.000Z' }))));

      fake.script({ reply: 'Recovered.' }, { reply: 'Recovered.' });
      const second = await startProcess('src/main.ts', env);
      try {
        await eventually(
          () =>
            read(async (db) => ((await db('tasks').first()).status === 'done' && (await db('sessions').where({ id: sessionId }).first()).state === 'waiting' ? true : undefined)),
          5000,
        );
        second.child.kill('SIGTERM');
        expect(await second.exited).to.equal(0);
      } finally {
        second.child.kill('SIGKILL');
        await fake.close();
      }
      const after = await read(async (db) => ({
        messages: await db('session_messages').where({ session_id: sessionId }).orderBy('id').select('author', 'text'),
        events: await db('task_events').orderBy('id').select('to_status'),
      }));
      expect(after.messages).to.deep.equal([
        { author: 'user', text: 'hello' },
        { author: 'scribe', text: 'Recovered.' },
      ]);
      expect(after.events.map((e) => e.to_status)).to.deep.equal(['open', 'in_progress', 'done']);
    });

    it('gives work back on SIGTERM once SHUTDOWN_TIMEOUT_MS has passed, without waiting for the model, and the next start answers it at once', async () => {
      const { fake, env, post, read, slug } = await setUp();
      fake.script({ hang: true });
      const first = await startProcess('src/main.ts', { ...env, OPENAI_TIMEOUT_MS: '60000', SHUTDOWN_TIMEOUT_MS: '500' });
      let sessionId: string;
      try {
        sessionId = (await post(first.url, `/api/v1/scribes/${slug}/chat`, { message: 'hello' })).session_id;
        await eventually(async () => (fake.seen.length === 1 ? true : undefined), 5000);
        const stopping = Date.now();
        first.child.kill('SIGTERM');
        expect(await first.exited).to.equal(0);
        expect(Date.now() - stopping, 'stops without waiting for the model').to.be.below(5000);
      } finally {
        first.child.kill('SIGKILL');
      }
      expect(await read((db) => db('sessions').where({ id: sessionId }).first())).to.include({ state: 'running', reply_due: stored(true), claim_token: null, lease_until: null });

      fake.script({ reply: 'Here now.' });
      const second = await startProcess('src/main.ts', env);
      try {
        await eventually(() => read(async (db) => ((await db('sessions').where({ id: sessionId }).first()).state === 'waiting' ? true : undefined)), 5000);
      } finally {
        second.child.kill('SIGKILL');
        await second.exited;
        await fake.close();
      }
    });
  });

  // One database is enough: this process starts on SQLite in either run.
  itOnlyOn('sqlite')('logs for people with LOG_FORMAT=pretty', async () => {
    const child = spawn(process.execPath, [builtEntry('src/main.ts')], { env: { PATH: process.env.PATH ?? '', DATA_DIR: tempDir(), PORT: '0', LOG_FORMAT: 'pretty' } });
    let output = '';
    child.stdout.on('data', (c) => (output += c));
    try {
      await eventually(async () => (output.includes('scribe is listening') ? true : undefined), 20_000);
      const line = output.split('\n').find((l) => l.includes('scribe is listening'))!;
      expect(line.trimStart().startsWith('{'), line).to.equal(false);
      expect(line).to.match(/INFO/);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
  });

  // One database is enough: what is tested is the log's stream, not the data.
  itOnlyOn('sqlite')('stops on SIGTERM and exits 0 when whatever read its stdout has gone (a pipe to head, a log reader that died)', async () => {
    const server = await startProcess('src/main.ts', { DATA_DIR: tempDir() });
    // The reading end closes: each line the server logs from now on meets EPIPE.
    server.child.stdout!.destroy();
    server.child.kill('SIGTERM');
    const code = await Promise.race([server.exited, new Promise((resolve) => setTimeout(() => resolve('still running after 15 s'), 15_000))]);
    if (code !== 0) server.child.kill('SIGKILL');
    expect(code).to.equal(0);
  });

  // One database is enough: what is tested is the process's signals.
  itOnlyOn('sqlite')('stops gracefully on a SIGTERM that comes while it starts, once it is up, rather than being killed by it', async () => {
    const dataDir = tempDir();
    const child = spawn(process.execPath, [builtEntry('src/main.ts')], { env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: '0' } });
    let output = '';
    child.stdout.on('data', (c) => (output += c));
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('exit', (code, signal) => resolve([code, signal])));
    // The secrets key is written as the server starts: the process is past its first lines, not yet listening.
    await eventually(async () => (fs.existsSync(path.join(dataDir, 'secrets-key')) ? true : undefined), 20_000);
    child.kill('SIGTERM');
    expect(await exited).to.deep.equal([0, null]);
    expect(output).to.include('"msg":"scribe is listening"').and.include('"msg":"scribe stopped"');
  });

  it('ends with one line naming PORT (or SMTP_PORT) when the port is taken, for npm start and npm run demo, not a stack trace', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      for (const [entry, env] of [
        ['src/main.ts', { PORT: String(port) }],
        ['src/demo.ts', { PORT: String(port) }],
        ['src/main.ts', { PORT: '0', SMTP_PORT: String(port) }],
      ] as const) {
        const dir = tempDir();
        const { code, output } = await runToExit(entry, { ...(await installEnv(dir)), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env });
        const variable = 'SMTP_PORT' in env ? 'SMTP_PORT' : 'PORT';
        expect(code, entry).to.equal(1);
        expect(output.trim(), entry).to.equal(
          `Cannot listen on 127.0.0.1:${port}: the port is in use. Stop what uses it, or set ${variable} to a free port (for example ${variable}=${port + 1}).`,
        );
        if (entry === 'src/demo.ts') {
          // Said before the seed: the database was not even migrated.
          const db = await openInstall(dir);
          try {
            expect(await tableNames(db), 'the demo stopped before its seed').to.deep.equal([]);
          } finally {
            await db.destroy();
          }
        }
      }
    } finally {
      taken.close();
    }
  });

  // One database is enough: the variables are refused before any database is opened.
  itOnlyOn('sqlite')('refuses to start with a bad variable, naming it', async () => {
    for (const [name, value] of [
      ['PORT', 'http'],
      ['LOG_LEVEL', 'loud'],
      ['ATTACHMENTS_ALLOW_PRIVATE', 'maybe'],
      ['RATE_LIMIT_PER_MINUTE', '-1'],
    ]) {
      const { code, output } = await runToExit('src/main.ts', { ...(await installEnv(tempDir())), [name!]: value! });
      expect(code, name).to.equal(1);
      expect(output, name).to.include(`Invalid configuration: ${name}`);
    }
  });

  /** `npm start`, `npm run demo` and an admin command on `env` each end with exit code 1 and the one line `said`, nothing more. */
  const endInOneLine = async (env: Record<string, string>, said: string) => {
    for (const entry of ['src/main.ts', 'src/demo.ts']) {
      expect(await runToExit(entry, env), entry).to.deep.equal({ code: 1, output: `${said}\n` });
    }
    expect(await runAdmin(['org', 'list'], env)).to.deep.equal({ code: 1, stdout: '', stderr: `error: ${said}\n` });
  };

  // About PostgreSQL's connections: the run's own database plays no part.
  itOnlyOn('postgres')(
    'ends with one line naming the database, never its password, when PostgreSQL cannot be reached or refuses, for npm start, npm run demo and the admin CLI',
    async () => {
      const closed = net.createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const nothingListens = (closed.address() as AddressInfo).port;
      await new Promise((resolve) => closed.close(resolve));
      const cluster = new URL(process.env.TEST_POSTGRES_URL!);
      const missing = new URL(cluster);
      missing.pathname = '/no_such_database';
      missing.password = 'hunter2';
      for (const [url, said] of [
        [`postgres://scribe:hunter2@127.0.0.1:${nothingListens}/scribe`, `127.0.0.1:${nothingListens}/scribe (DATABASE_URL): connection refused. Is PostgreSQL running there?`],
        [missing.toString(), `${cluster.hostname}:${cluster.port}/no_such_database (DATABASE_URL): database "no_such_database" does not exist.`],
      ] as const) {
        await endInOneLine({ ...(await installEnv(tempDir())), DATABASE_URL: url, HOST: '127.0.0.1', PORT: '0' }, `Cannot connect to the database at ${said}`);
      }
    },
  );

  itOnlyOn('sqlite')('ends with one line naming the file when the SQLite database cannot be opened, for npm start, npm run demo and the admin CLI', async () => {
    const env = { ...(await installEnv(tempDir())), HOST: '127.0.0.1', PORT: '0' };
    // A folder where the database file should be.
    const file = path.join(env.DATA_DIR!, 'scribe.sqlite');
    fs.mkdirSync(file, { recursive: true });
    await endInOneLine({ ...env, DATABASE_URL: file }, `Cannot open the SQLite database ${file}: unable to open database file.`);
  });

  itOnlyOn('sqlite')('ends with one line naming the file when the SQLite database may be read but not written, for npm start and the admin CLI', async () => {
    // A restore without its chown: a database file the service's user may not write.
    const dataDir = tempDir();
    const env = { DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: '0' };
    expect((await runAdmin(['org', 'create', '--name', 'Restored'], env)).code).to.equal(0);
    const file = path.join(dataDir, 'scribe.sqlite');
    fs.chmodSync(file, 0o444);
    // Root writes any file: as root, the processes run as nobody, who owns the folder but not the file.
    const user = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;
    if (user) {
      for (const name of [dataDir, ...fs.readdirSync(dataDir).map((entry) => path.join(dataDir, entry))]) if (name !== file) fs.chownSync(name, user.uid, user.gid);
    }
    const said = `Cannot write the SQLite database ${file}: the service's user may not write the file or its folder (owner and mode).`;
    expect(await runToExit('src/main.ts', env, { user })).to.deep.equal({ code: 1, output: `${said}\n` });
    expect(await runToExit('src/cli/admin.ts', env, { args: ['org', 'create', '--name', 'Another'], user })).to.deep.equal({ code: 1, output: `error: ${said}\n` });
  });

  // One database is enough: DATA_DIR is used before any database is opened.
  itOnlyOn('sqlite')('ends with one line naming DATA_DIR when it cannot be used, for npm start, npm run demo and the admin CLI', async () => {
    const env = await installEnv(tempDir());
    // A data folder whose path goes through a file.
    const notAFolder = path.join(env.DATA_DIR, 'a-file');
    fs.writeFileSync(notAFolder, '');
    const dataDir = path.join(notAFolder, 'data');
    const unusable = { ...env, DATA_DIR: dataDir, DATABASE_URL: path.join(env.DATA_DIR, 'scribe.sqlite'), HOST: '127.0.0.1', PORT: '0' };
    await endInOneLine(unusable, `Cannot use DATA_DIR ${dataDir}: a part of its path is a file, not a folder (secrets-key).`);
  });

  it('npm run demo seeds once, prints the key and login, and serves them', async () => {
    const dataDir = tempDir();
    const counts = async () => {
      const db = await openInstall(dataDir);
      try {
        const tables = ['organizations', 'api_keys', 'users', 'scribes', 'schedules', 'channels', 'requests', 'entry_types', 'entries'];
        return Object.fromEntries(await Promise.all(tables.map(async (t) => [t, Number((await db(t).count({ n: '*' }).first())!.n)])));
      } finally {
        await db.destroy();
      }
    };
    let first: Record<string, number> | undefined;
    for (let run = 0; run < 2; run++) {
      const demo = await startProcess('src/demo.ts', { ...(await installEnv(dataDir)) });
      try {
        await eventually(async () => (demo.output().includes('Console login:') ? true : undefined));
        const key = /API key:\s+(\S+)/.exec(demo.output())![1]!;
        expect(demo.output()).to.match(/Console login:\s+\S+@\S+ \/ \S+/);
        const orgId = /Organization:\s+(\S+)/.exec(demo.output())![1]!;
        const res = await fetch(`${demo.url}/api/v1/scribes/atlas/requests`, { headers: { 'X-Api-Key': key } });
        expect(res.status).to.equal(200);
        const body = (await res.json()) as { requests: unknown[] };
        // The seed's history: three days of them.
        expect(body.requests.length).to.be.greaterThan(10);
        // The printed console login signs in (through the form, as a browser would).
        const [, email, password] = /Console login:\s+(\S+) \/ (\S+)/.exec(demo.output())!;
        const signedIn = await signInByForm(demo.url, email!, password!);
        expect(signedIn.status).to.equal(303);
        const dashboard = await fetch(`${demo.url}/`, { headers: { cookie: signedIn.headers.get('set-cookie')!.split(';')[0]! } });
        expect(await dashboard.text()).to.include('<h1>Dashboard</h1>');
        // The banner stays readable: no request log lines below it unless LOG_LEVEL asks.
        expect(demo.output()).not.to.include('request completed');
        // The printed organization is the key's (the README's admin commands take it as ORG_ID).
        const listed = await runAdmin(['schedule', 'list', '--org', orgId], await installEnv(dataDir));
        expect(listed.code, listed.stderr).to.equal(0);
        expect(JSON.parse(listed.stdout).schedules.map((s: { scribe: string }) => s.scribe)).to.deep.equal(['atlas', 'atlas']);
        if (run === 0) {
          // The printed webhook example works as printed.
          const [, url, body] = /curl -s (\S+\/inbound\/\S+) -H 'Content-Type: application\/json' -d '([^']+)'/.exec(demo.output())!;
          const made = await fetch(url!, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
          expect(made.status).to.equal(202);
        }
      } finally {
        demo.child.kill('SIGTERM');
        expect(await demo.exited).to.equal(0);
      }
      const now = await counts();
      if (first) expect(now, 'a second run adds nothing').to.deep.equal(first);
      first = now;
    }
    const { requests, ...made } = first!;
    expect(made).to.deep.equal({ organizations: 1, api_keys: 1, users: 1, scribes: 3, schedules: 2, channels: 1, entry_types: 2, entries: 355 });
    // The history's receipts (how many depends on the hour it was seeded at), and the webhook call's.
    expect(requests).to.be.greaterThan(80);
  });
});
