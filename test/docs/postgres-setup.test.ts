import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import pg from 'pg';
import { runAdminProcess } from '../helpers/cli.js';
import { onlyOn } from '../helpers/databases.js';
import { markedBlocks } from '../helpers/docs.js';
import { tempDir } from '../helpers/harness.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const isRoot = process.getuid?.() === 0;
/** Ahead of the cluster's own `trust` lines: the role the docs make signs in with its password. */
const PASSWORD_RULE = 'host all scribe 127.0.0.1/32 scram-sha-256 # postgres-setup.test.ts\n';

/** Runs the superuser's SQL on the test cluster, in `database`. */
async function superuser<T extends pg.QueryResultRow>(sql: string, database = 'postgres'): Promise<T[]> {
  const url = new URL(process.env.TEST_POSTGRES_URL!);
  url.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

/**
 * Runs `script` in bash as a root reader would paste it, against the test cluster instead
 * of the one Debian's package starts: PGHOST and PGPORT point psql and createdb at it.
 */
function runAsRoot(script: string, port: string): Promise<string> {
  const shims = [
    'set -euo pipefail',
    'apt-get() { :; }',
    // Not root (a developer's run): the cluster is this user's, its superuser still `postgres`.
    ...(isRoot ? [] : ['runuser() { [ "$1 $2 $3" = "-u postgres --" ] || return 1; shift 3; PGUSER=postgres "$@"; }']),
  ];
  const env = { PATH: process.env.PATH ?? '', HOME: os.homedir(), PGHOST: '127.0.0.1', PGPORT: port };
  return new Promise((resolve, reject) => {
    // cwd: one the postgres user may enter.
    execFile('bash', ['-c', `${shims.join('\n')}\n${script}`], { env, cwd: os.tmpdir() }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
    );
  });
}

onlyOn('postgres')('the PostgreSQL steps of the README and docs/deploy.md, on a fresh Debian machine as root', function () {
  this.timeout(30_000);
  const port = () => new URL(process.env.TEST_POSTGRES_URL!).port;
  let hbaFile = '';
  let hba = '';

  before(async () => {
    [{ hba_file: hbaFile }] = (await superuser<{ hba_file: string }>('show hba_file')) as [{ hba_file: string }];
    hba = fs.readFileSync(hbaFile, 'utf8');
    fs.writeFileSync(hbaFile, PASSWORD_RULE + hba);
    await superuser('select pg_reload_conf()');
  });
  after(async () => {
    fs.writeFileSync(hbaFile, hba);
    await superuser('select pg_reload_conf()');
  });
  afterEach(async () => {
    await superuser('drop database if exists scribe with (force)');
    await superuser('drop role if exists scribe');
  });

  for (const doc of ['README.md', 'docs/deploy.md']) {
    it(`${doc}: makes a role with a password and a database it owns, whose URL the admin CLI migrates and writes with`, async () => {
      const [block] = markedBlocks(path.join(ROOT, doc), 'postgres-setup');
      const output = await runAsRoot(block!, port());

      const url = /^DATABASE_URL=(\S+)$/m.exec(output)?.[1];
      expect(url, output).to.match(/^postgres:\/\/scribe:[0-9a-f]{48}@127\.0\.0\.1\/scribe$/);
      // The URL names no port, as on Debian (5432); pg takes PGPORT then, as psql did.
      const created = await runAdminProcess(['org', 'create', '--name', 'Acme'], { DATABASE_URL: url!, PGPORT: port(), DATA_DIR: tempDir() });
      expect(created.stderr).to.equal('');
      expect(created.code).to.equal(0);
      const org = JSON.parse(created.stdout) as { id: string; name: string };
      expect(org.name).to.equal('Acme');

      const [owners] = await superuser<{ database: string; tables: string }>(
        "select pg_get_userbyid(d.datdba) as database, (select tableowner from pg_tables where tablename = 'organizations') as tables from pg_database d where d.datname = 'scribe'",
        'scribe',
      );
      expect(owners).to.deep.equal({ database: 'scribe', tables: 'scribe' });
      expect(await superuser('select id, name from organizations', 'scribe')).to.deep.equal([{ id: org.id, name: 'Acme' }]);

      // The password is checked: another one is refused.
      const wrong = new URL(url!);
      wrong.password = 'not-the-password';
      wrong.port = port();
      const client = new pg.Client({ connectionString: wrong.toString() });
      client.on('error', () => {});
      const refused = await client.connect().then(
        () => client.end().then(() => 'connected'),
        (err: Error) => err.message,
      );
      expect(refused).to.equal('password authentication failed for user "scribe"');
    });
  }
});
