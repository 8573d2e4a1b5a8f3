import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { createHarness, tempDir, testClock, type Harness, type Tenant } from '../helpers/harness.js';
import { installEnv, itOnlyOn, openInstall } from '../helpers/databases.js';
import { runAdmin } from '../helpers/cli.js';
import { runToExit, startProcess } from '../helpers/process.js';
import { KEY_FILE } from '../../src/secrets/keys.js';
import { provision } from '../helpers/provision.js';
import { createAttachmentStore } from '../../src/requests/attachments/store.js';

describe('backups and data care', function () {
  this.timeout(60_000);

  // SQLite's online backup; PostgreSQL is backed up with pg_dump (below).
  itOnlyOn('sqlite')('admin backup copies the database while the server writes to it, and the copy restores into a working server', async () => {
    const dataDir = tempDir();
    const { services, key, scribe, close } = await provision(dataDir);
    for (let i = 0; i < 50; i++) await services.requests.submit(scribe, { task: { summary: `before backup ${i}` } });
    await close();
    const server = await startProcess('src/main.ts', { ...(await installEnv(dataDir)) });
    const backupFile = path.join(tempDir(), 'nightly', 'scribe-backup.sqlite');
    let accepted = 0;
    try {
      // Writes keep arriving while the backup runs.
      let writing = true;
      const load = (async () => {
        while (writing) {
          const res = await fetch(`${server.url}/api/v1/scribes/${scribe.slug}/requests`, {
            method: 'POST',
            headers: { 'X-Api-Key': key, 'Content-Type': 'application/json' },
            body: '{"task":{"summary":"during backup"}}',
          });
          if (res.status === 202) accepted++;
        }
      })();
      await new Promise((resolve) => setTimeout(resolve, 200));
      const result = await runAdmin(['backup', '--to', backupFile], { ...(await installEnv(dataDir)) });
      writing = false;
      await load;
      expect(result.stderr).to.equal('');
      expect(result.code).to.equal(0);
      const printed = JSON.parse(result.stdout);
      expect(printed.file).to.equal(backupFile);
      expect(printed.bytes).to.equal(fs.statSync(backupFile).size);
      expect(fs.existsSync(`${backupFile}.partial`)).to.equal(false);
      // The whole database: its user's alone, whatever the umask of the cron job that makes it.
      expect(fs.statSync(backupFile).mode & 0o777).to.equal(0o600);
      expect(fs.statSync(path.dirname(backupFile)).mode & 0o777).to.equal(0o700);
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    expect(accepted).to.be.greaterThan(0);

    // Restore: the backup file becomes the database of a fresh data dir.
    const restored = tempDir();
    fs.copyFileSync(backupFile, path.join(restored, 'scribe.sqlite'));
    const check = await openInstall(restored);
    try {
      expect(await check.raw('pragma integrity_check')).to.deep.equal([{ integrity_check: 'ok' }]);
      expect(await check('requests').where('summary', 'like', 'before backup%').count({ n: '*' }).first()).to.deep.equal({ n: 50 });
    } finally {
      await check.destroy();
    }
    // The stored secrets open only with the install's key, kept apart from the backup: without it the restore says so.
    const keyless = await runToExit('src/main.ts', { ...(await installEnv(restored)), PORT: '0' });
    expect(keyless.code).to.equal(1);
    expect(keyless.output).to.match(/^SECRETS_KEY: this database's secrets are sealed with key [0-9a-f]{8}, but this process has key [0-9a-f]{8}/m);
    fs.copyFileSync(path.join(dataDir, KEY_FILE), path.join(restored, KEY_FILE));
    const again = await startProcess('src/main.ts', { ...(await installEnv(restored)) });
    try {
      const res = await fetch(`${again.url}/api/v1/scribes/${scribe.slug}/requests?limit=100`, { headers: { 'X-Api-Key': key } });
      expect(res.status).to.equal(200);
      expect(((await res.json()) as { requests: unknown[] }).requests.length).to.be.at.least(50);
    } finally {
      again.child.kill('SIGTERM');
      await again.exited;
    }
  });

  it("makes DATA_DIR, its database's folder and the attachments' folders for its user alone, whatever the umask", async () => {
    const dataDir = path.join(tempDir(), 'srv', 'data');
    const previous = process.umask(0o022);
    try {
      expect((await runAdmin(['org', 'create', '--name', 'Private'], { ...(await installEnv(tempDir())), DATA_DIR: dataDir })).code).to.equal(0);
      const store = createAttachmentStore(path.join(dataDir, 'attachments'));
      const temp = await store.tempFile();
      fs.writeFileSync(temp, 'report');
      await store.keep(temp, 'ab'.repeat(32));
      for (const folder of [path.dirname(dataDir), dataDir, path.join(dataDir, 'attachments'), path.join(dataDir, 'attachments', 'ab'), path.join(dataDir, 'attachments', 'tmp')]) {
        expect(fs.statSync(folder).mode & 0o777, folder).to.equal(0o700);
      }
    } finally {
      process.umask(previous);
    }
  });

  itOnlyOn('sqlite')('admin backup says in one line why it cannot write where it was told, and leaves no partial copy', async () => {
    const dataDir = tempDir();
    const env = await installEnv(dataDir);
    const folder = tempDir();
    const aFile = path.join(folder, 'a-file');
    fs.writeFileSync(aFile, '');
    for (const [to, reason] of [
      [folder, 'a folder stands where its file should be'],
      [path.join(aFile, 'scribe.sqlite'), 'a part of its path is a file, not a folder'],
      [path.join(aFile, 'nightly', 'scribe.sqlite'), 'a part of its path is a file, not a folder'],
    ] as const) {
      expect(await runAdmin(['backup', '--to', to], env), to).to.deep.equal({ code: 1, stdout: '', stderr: `error: Cannot write the backup to ${to}: ${reason}.\n` });
    }
    expect(fs.existsSync(`${folder}.partial`)).to.equal(false);
    expect(fs.readdirSync(folder)).to.deep.equal(['a-file']);
  });

  describe('retention', () => {
    let h: Harness;
    let t: Tenant;
    const clock = testClock();
    const DAY = 86_400_000;
    before(async () => {
      h = await createHarness({ env: { RETENTION_SESSION_DAYS: '30', RETENTION_ORPHAN_FILES: 'true' }, options: { clock, runOnNewWork: false } });
      t = await h.tenant();
    });
    after(() => h.close());

    async function session(endImmediately: boolean) {
      const res = await h.api.post(`/api/v1/scribes/${t.scribe.slug}/chat`).set(t.headers).send({ message: 'old', end_session_immediately: endImmediately });
      return res.body.session_id as string;
    }

    it('deletes finished sessions untouched for the configured days, with their transcripts, and keeps the rest', async () => {
      const finished = await session(true);
      const open = await session(false);
      await h.services.runtime.tick();
      clock.advance(31 * DAY);
      const recent = await session(true);
      await h.services.runtime.tick();
      expect((await h.services.retention.run()).sessions).to.equal(1);
      expect(await h.db('sessions').where({ id: finished })).to.have.length(0);
      expect(await h.db('session_messages').where({ session_id: finished })).to.have.length(0);
      expect(await h.db('sessions').whereIn('id', [open, recent])).to.have.length(2);
    });

    it('deletes attachment files no receipt refers to, once a day old, and keeps referenced ones', async () => {
      const dir = path.join(h.dir, 'attachments');
      const referenced = 'a'.repeat(64);
      const orphan = 'b'.repeat(64);
      for (const name of [referenced, orphan]) {
        fs.mkdirSync(path.join(dir, name.slice(0, 2)), { recursive: true });
        fs.writeFileSync(path.join(dir, name.slice(0, 2), name), 'x');
      }
      fs.mkdirSync(path.join(dir, 'tmp'), { recursive: true });
      fs.writeFileSync(path.join(dir, 'tmp', 'interrupted'), 'x');
      // Written "now" by the test clock, which runs ahead of the real one.
      for (const file of [path.join(dir, referenced.slice(0, 2), referenced), path.join(dir, orphan.slice(0, 2), orphan), path.join(dir, 'tmp', 'interrupted')]) {
        fs.utimesSync(file, clock(), clock());
      }
      const receipt = await h.api
        .post(`/api/v1/scribes/${t.scribe.slug}/requests`)
        .set(t.headers)
        .send({ task: { summary: 'with file' } });
      await h.db('attachments').insert({
        id: '01935f00-0000-7000-8000-0000000000a1',
        request_id: receipt.body.request.id,
        position: 0,
        url: 'https://example.com/f',
        filename: 'f',
        content_type: 'text/plain',
        size_bytes: 1,
        sha256: referenced,
        created_at: clock().toISOString(),
      });
      expect((await h.services.retention.run()).files, 'young files are kept').to.equal(0);
      clock.advance(2 * DAY);
      expect((await h.services.retention.run()).files).to.equal(2);
      expect(fs.existsSync(path.join(dir, referenced.slice(0, 2), referenced))).to.equal(true);
      expect(fs.existsSync(path.join(dir, orphan.slice(0, 2), orphan))).to.equal(false);
      expect(fs.existsSync(path.join(dir, 'tmp', 'interrupted'))).to.equal(false);
    });

    it('does nothing when not configured', async () => {
      const plain = await createHarness();
      try {
        expect(await plain.services.retention.run()).to.deep.equal({ sessions: 0, files: 0 });
      } finally {
        await plain.close();
      }
    });
  });
  itOnlyOn('postgres')('admin backup on PostgreSQL says to use pg_dump, exits 1 and writes nothing', async () => {
    const dataDir = tempDir();
    const { close, env } = await provision(dataDir);
    await close();
    const backupFile = path.join(tempDir(), 'scribe-backup.sqlite');
    const result = await runAdmin(['backup', '--to', backupFile], env);
    expect(result.code).to.equal(1);
    expect(result.stdout).to.equal('');
    expect(result.stderr).to.equal('error: On PostgreSQL, back up with pg_dump (docs/deploy.md, "Backups"): pg_dump --format=custom --file=scribe.dump "$DATABASE_URL"\n');
    expect(fs.existsSync(backupFile)).to.equal(false);
  });
});
