import fs from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { eventually, tempDir } from '../helpers/harness.js';
import { createTestInstall, onlyOn, type TestInstall } from '../helpers/databases.js';
import { startProcess, type ServerProcess } from '../helpers/process.js';
import { runAdmin } from '../helpers/cli.js';
import { signInByForm } from '../helpers/console.js';
import { DEMO } from '../../seeds/demo.js';
import { KEY_FILE } from '../../src/secrets/keys.js';

const README = fileURLToPath(new URL('../../README.md', import.meta.url));

/** The README's read-only example calls (GET, no variable but $KEY, $COMPANIES and $CONTACTS), as paths. */
function readmeReads(): string[] {
  const text = fs.readFileSync(README, 'utf8');
  const vars = Object.fromEntries([...text.matchAll(/^export (COMPANIES|CONTACTS)=(\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
  const paths: string[] = [];
  for (const line of text.split('\n')) {
    const plain = /^curl -s "\$SCRIBE(\/api\/v1\/[^"]+)" -H "X-Api-Key: \$KEY"$/.exec(line);
    const search = /^curl -s -G "\$SCRIBE(\/api\/v1\/[^"]+)" -H "X-Api-Key: \$KEY" --data-urlencode '([a-z_]+)=([^']*)'$/.exec(line);
    const path = plain?.[1] ?? (search ? `${search[1]}?${search[2]}=${encodeURIComponent(search[3]!)}` : undefined);
    if (!path) continue;
    const filled = path.replace(/\$(COMPANIES|CONTACTS)/g, (_, name: string) => vars[name]!);
    if (!filled.includes('$')) paths.push(filled);
  }
  return paths;
}

onlyOn('postgres')('admin copy-database', function () {
  this.timeout(120_000);
  let sqlite: TestInstall;
  let postgres: TestInstall;
  const servers: ServerProcess[] = [];

  before(async () => {
    // The demo on SQLite, run until its seeded work is done (so neither copy has work left to do).
    sqlite = await createTestInstall(tempDir(), { kind: 'sqlite' });
    postgres = await createTestInstall(tempDir(), { kind: 'postgres' });
    const demo = await startProcess('src/demo.ts', sqlite.env);
    const db = sqlite.open();
    try {
      await eventually(async () => {
        const open = await db('requests').whereIn('status', ['accepted', 'dispatched']).count({ n: '*' }).first();
        const tasks = await db('tasks').whereIn('status', ['open', 'in_progress']).count({ n: '*' }).first();
        return Number(open!.n) + Number(tasks!.n) === 0 ? true : undefined;
      }, 20_000);
    } finally {
      await db.destroy();
      demo.child.kill('SIGTERM');
      await demo.exited;
    }
  });
  after(async () => {
    for (const server of servers) server.child.kill('SIGKILL');
    await postgres.drop();
  });

  it("copies the demo into an empty PostgreSQL database, which answers the README's reads with the same bodies, the same key and the same console password", async () => {
    const copied = await runAdmin(['copy-database', '--to', postgres.databaseUrl], sqlite.env);
    expect(copied.stderr).to.equal('');
    expect(copied.code).to.equal(0);
    const { copied: rows } = JSON.parse(copied.stdout) as { copied: Record<string, number> };
    expect(rows).to.include({ settings: 1, organizations: 1, api_keys: 1, users: 1, scribes: 3 });
    expect(rows.entries).to.be.greaterThan(0);
    // The sealed secrets came along as they were: the PostgreSQL processes get the same key.
    fs.copyFileSync(path.join(sqlite.dir, KEY_FILE), path.join(postgres.dir, KEY_FILE));

    const [before, after] = [await startProcess('src/main.ts', sqlite.env), await startProcess('src/main.ts', postgres.env)];
    servers.push(before, after);
    const paths = readmeReads();
    expect(paths.length, 'the README has read examples').to.be.greaterThan(8);
    for (const path of paths) {
      const [was, is] = await Promise.all([before, after].map((s) => fetch(`${s.url}${path}`, { headers: { 'X-Api-Key': DEMO.apiKey } })));
      expect(is!.status, path).to.equal(was!.status);
      expect(await is!.text(), path).to.equal(await was!.text());
    }
    const signIn = await signInByForm(after.url!, DEMO.userEmail, DEMO.userPassword);
    expect(signIn.status, 'the copied password hash signs in').to.equal(303);

    // New work goes on where the copy left off (sequences were moved past the copied ids).
    const submitted = await fetch(`${after.url}/api/v1/scribes/atlas/requests`, {
      method: 'POST',
      headers: { 'X-Api-Key': DEMO.apiKey, 'Content-Type': 'application/json' },
      body: JSON.stringify({ task: { summary: 'after the move' } }),
    });
    expect(submitted.status).to.equal(202);
  });

  it('refuses a target that is not empty, or not PostgreSQL, and changes nothing', async () => {
    const again = await runAdmin(['copy-database', '--to', postgres.databaseUrl], sqlite.env);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.equal('error: The target database is not empty (settings has rows); copy into an empty database\n');
    const file = await runAdmin(['copy-database', '--to', '/tmp/elsewhere.sqlite'], sqlite.env);
    expect(file.code).to.equal(1);
    expect(file.stderr).to.equal('error: --to must be a postgres:// or postgresql:// URL\n');
    // A target out of reach: one line naming --to, the host, port and database, not the password.
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const unreachable = await runAdmin(['copy-database', '--to', `postgres://scribe:hunter2@127.0.0.1:${port}/moved`], sqlite.env);
    expect(unreachable).to.deep.equal({
      code: 1,
      stdout: '',
      stderr: `error: Cannot connect to the database at 127.0.0.1:${port}/moved (--to): connection refused. Is PostgreSQL running there?\n`,
    });
    const cluster = new URL(postgres.databaseUrl);
    cluster.pathname = '/no_such_database';
    const missing = await runAdmin(['copy-database', '--to', cluster.toString()], sqlite.env);
    expect(missing.stderr).to.equal(
      `error: Cannot connect to the database at ${cluster.hostname}:${cluster.port}/no_such_database (--to): database "no_such_database" does not exist.\n`,
    );
    const fromPostgres = await runAdmin(['copy-database', '--to', postgres.databaseUrl], postgres.env);
    expect(fromPostgres.code).to.equal(1);
    expect(fromPostgres.stderr).to.equal('error: copy-database copies from a SQLite install (DATABASE_URL is already PostgreSQL)\n');
  });
});
