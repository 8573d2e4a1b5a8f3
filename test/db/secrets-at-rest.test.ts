import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { createHarness, staffOf, tempDir, type Harness, type Tenant } from '../helpers/harness.js';
import { createTestInstall, testDatabaseKind } from '../helpers/databases.js';
import { findPostgresBinDir } from '../helpers/postgres-cluster.js';
import { runAdmin } from '../helpers/cli.js';
import { runToExit } from '../helpers/process.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { migrateToLatest, migrationConfig } from '../../src/db/migrate.js';
import { startServer } from '../../src/server.js';
import { KEY_FILE, openSecretBox } from '../../src/secrets/keys.js';
import { isSealed } from '../../src/secrets/secret-box.js';

const run = promisify(execFile);

const MODEL_KEY = 'sk-model-key-in-clear-4b7d9e';
const MCP_TOKEN = 'Bearer mcp-token-in-clear-8c2f';
const CHANNEL_SECRET = 'channel-secret-in-clear-5a1e3d7f';
const key = (byte: number) => Buffer.alloc(32, byte).toString('base64');

/** Every stored secret, as the columns hold them. */
async function storedSecrets(h: Harness): Promise<string[]> {
  const rows = await Promise.all([
    h.db('scribes').whereNotNull('model_api_key').pluck('model_api_key'),
    h.db('mcp_servers').pluck('headers'),
    h.db('channels').whereNotNull('secret').pluck('secret'),
    h.db('webhook_endpoints').pluck('secret'),
    h.db('webhook_endpoints').whereNotNull('previous_secret').pluck('previous_secret'),
  ]);
  return rows.flat() as string[];
}

/** What a thief with the database and without the key gets: the SQLite file and its WAL, or a pg_dump. */
async function databaseCopy(h: Harness): Promise<string> {
  if (testDatabaseKind === 'sqlite') {
    await h.db.raw('pragma wal_checkpoint(truncate)');
    const file = h.config.databaseUrl;
    return [file, `${file}-wal`]
      .filter((f) => fs.existsSync(f))
      .map((f) => fs.readFileSync(f).toString('latin1'))
      .join('\n');
  }
  const { stdout } = await run(path.join(findPostgresBinDir(), 'pg_dump'), ['--dbname', h.config.databaseUrl], { maxBuffer: 256 * 1024 * 1024 });
  return stdout;
}

describe('secrets at rest', function () {
  this.timeout(30_000);
  let h: Harness;
  let t: Tenant;
  let clear: string[];
  /** The channels' tokens, which are credentials too: whoever holds one may post to the scribe. */
  let tokens: string[];

  before(async () => {
    h = await createHarness({ env: { MODELS_ALLOW_PRIVATE: 'true' }, options: { runOnNewWork: false, dispatchOnAccept: false } });
    t = await h.tenant({ slug: 'oracle' });
    await h.services.scribes.setAgent(t.organizationId, 'oracle', { agent: 'openai', baseUrl: 'https://models.example.com/v1', apiKey: MODEL_KEY });
    await h.services.mcpServers.add(staffOf(t), 'oracle', { url: 'https://tools.example.com/mcp', headers: [`Authorization: ${MCP_TOKEN}`] });
    const signed = await h.services.channels.create(staffOf(t), 'oracle', { kind: 'webhook', verify: 'hmac-sha256', secret: CHANNEL_SECRET });
    const generated = await h.services.channels.create(staffOf(t), 'oracle', { kind: 'webhook', verify: 'standard-webhooks' });
    const { endpoint, secret: first } = await h.services.webhooks.create(staffOf(t), { url: 'https://hooks.example.com/in' });
    const { secret: second } = await h.services.webhooks.rotateSecret(staffOf(t), endpoint.id);
    clear = [MODEL_KEY, MCP_TOKEN, CHANNEL_SECRET, generated.secret!, first, second];
    tokens = [signed.channel.token!, generated.channel.token!];
  });
  after(() => h.close());

  it("stores every secret sealed under the install's key, and a copy of the database holds none of them in clear", async () => {
    const stored = await storedSecrets(h);
    expect(stored).to.have.length(6);
    for (const value of stored) expect(isSealed(value), value).to.equal(true);
    expect(stored.map((value) => h.services.secrets.open(value)).sort()).to.deep.equal(
      [MODEL_KEY, JSON.stringify({ Authorization: MCP_TOKEN }), CHANNEL_SECRET, ...clear.slice(3)].sort(),
    );
    const copy = await databaseCopy(h);
    expect(copy.length).to.be.greaterThan(10_000);
    for (const secret of [...clear, 'mcp-token-in-clear', Buffer.from(clear[5]!.replace(/^whsec_/, ''), 'base64').toString('latin1')]) {
      expect(copy.includes(secret), `found in the copy: ${secret}`).to.equal(false);
    }
    expect(copy).to.include(h.services.secrets.keyId);
  });

  it("keeps the channels' tokens hashed (how the inbound side finds them) and sealed (how an admin's page shows them), none in clear", async () => {
    const rows = await h.db('channels').orderBy('created_at').select('token', 'token_hash');
    expect(rows.map((row) => isSealed(row.token))).to.deep.equal([true, true]);
    expect(rows.map((row) => h.services.secrets.open(row.token)).sort()).to.deep.equal([...tokens].sort());
    expect(rows.map((row) => row.token_hash).sort()).to.deep.equal(tokens.map((token) => crypto.createHash('sha256').update(token).digest('hex')).sort());
    const copy = await databaseCopy(h);
    for (const token of tokens) expect(copy.includes(token), `found in the copy: ${token}`).to.equal(false);
    // And the token still finds its channel.
    const res = await h.api.post(`/inbound/${tokens[1]}`).set('Content-Type', 'application/json').send('{"summary":"x"}');
    expect(res.status, JSON.stringify(res.body)).to.equal(401);
    expect(res.body).to.deep.equal({ error: 'Invalid signature' });
    const unknown = `${tokens[1]!.slice(0, -1)}${tokens[1]!.endsWith('A') ? 'B' : 'A'}`;
    expect((await h.api.post(`/inbound/${unknown}`).set('Content-Type', 'application/json').send('{}')).status).to.equal(404);
  });

  it('keeps the key outside the database: generated once in DATA_DIR (mode 0600) when SECRETS_KEY is unset', () => {
    const file = path.join(h.dir, KEY_FILE);
    expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
    expect(Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64')).to.have.length(32);
    expect(openSecretBox({ dataDir: h.dir, secretsKey: undefined }).keyId).to.equal(h.services.secrets.keyId);
    expect(openSecretBox({ dataDir: tempDir(), secretsKey: undefined }).keyId).not.to.equal(h.services.secrets.keyId);
    expect(openSecretBox({ dataDir: h.dir, secretsKey: key(9) }).keyId, 'SECRETS_KEY wins over the file').to.equal(openSecretBox({ dataDir: tempDir(), secretsKey: key(9) }).keyId);
  });

  it('seals the secrets an earlier version stored in clear when migrating, and opens them on the way down', async () => {
    const config = migrationConfig();
    const secrets = h.services.secrets;
    // Down past the two that made sealing (and those after them): the way down opens what the way up sealed.
    while ((await h.db.migrate.currentVersion(config)) >= '20261128000100') await h.db.withUserParams({ secrets }).migrate.down(config);
    expect(await h.db.schema.hasTable('settings')).to.equal(false);
    expect((await storedSecrets(h)).filter(isSealed)).to.deep.equal([]);
    expect(await h.db('scribes').whereNotNull('model_api_key').pluck('model_api_key')).to.deep.equal([MODEL_KEY]);
    expect(JSON.parse((await h.db('mcp_servers').first('headers')).headers)).to.deep.equal({ Authorization: MCP_TOKEN });

    // Without the key the migration says what it needs rather than leave secrets in clear.
    const refused = await migrateToLatest(h.db).catch((err: Error) => err);
    expect(String(refused)).to.include('scribes.model_api_key holds secrets to seal: migrate through the server or the admin CLI, which have the secrets key');
    expect((await storedSecrets(h)).filter(isSealed)).to.deep.equal([]);

    await migrateToLatest(h.db, { secrets });
    const stored = await storedSecrets(h);
    expect(stored.every(isSealed)).to.equal(true);
    expect(await h.db('settings').where({ name: 'secrets_key_id' }).first('value')).to.deep.equal({ value: secrets.keyId });
    // And the sealed secrets still do their work: the channel verifies a body signed with its secret.
    const channel = await h.db('channels').where({ verify: 'hmac-sha256' }).first();
    const body = JSON.stringify({ summary: 'Signed after the migration' });
    const signature = crypto.createHmac('sha256', CHANNEL_SECRET).update(body).digest('hex');
    const res = await h.api
      .post(`/inbound/${secrets.open(channel.token)}`)
      .set('Content-Type', 'application/json')
      .set('X-Signature', `sha256=${signature}`)
      .send(body);
    expect(res.status).to.equal(202);
  });
});

describe('the secrets key shared by the processes on one database', function () {
  this.timeout(60_000);

  it("stops a server, an admin command and a process whose key is not the database's, naming SECRETS_KEY, and starts one with the same key", async () => {
    const install = await createTestInstall(tempDir());
    const base = { ...install.env, LOG_LEVEL: 'silent', PORT: '0', SECRETS_KEY: key(1) };
    const logger = createLogger('silent');
    const first = await startServer(loadConfig(base), logger);
    const keyId = openSecretBox({ dataDir: install.dir, secretsKey: key(1) }).keyId;
    const otherId = openSecretBox({ dataDir: install.dir, secretsKey: key(2) }).keyId;
    const message = `SECRETS_KEY: this database's secrets are sealed with key ${keyId}, but this process has key ${otherId}; give every process on one database the same SECRETS_KEY`;
    try {
      const refused = await startServer(loadConfig({ ...base, SECRETS_KEY: key(2) }), logger).catch((err: Error) => err);
      expect(String(refused)).to.equal(`ConfigError: ${message}`);
      const cli = await runAdmin(['org', 'create', '--name', 'Acme'], { ...base, SECRETS_KEY: key(2) });
      expect(cli).to.deep.equal({ code: 1, stdout: '', stderr: `error: ${message}\n` });
      // Without SECRETS_KEY a machine makes a key of its own in its DATA_DIR: refused the same way.
      const own = await runToExit('src/main.ts', { ...base, SECRETS_KEY: '', DATA_DIR: tempDir() });
      expect(own.code).to.equal(1);
      expect(own.output).to.match(/^SECRETS_KEY: this database's secrets are sealed with key [0-9a-f]{8}, but this process has key [0-9a-f]{8}; give every process/m);
      const same = await startServer(loadConfig(base), logger);
      await same.stop();
      const org = await runAdmin(['org', 'create', '--name', 'Acme'], base);
      expect(org.code).to.equal(0);
    } finally {
      await first.stop();
      await install.drop();
    }
  });
});
