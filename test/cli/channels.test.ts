import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import nodemailer from 'nodemailer';
import { cliInstall } from '../helpers/cli.js';
import { openInstall } from '../helpers/databases.js';
import { startProcess, type ServerProcess } from '../helpers/process.js';

describe('the admin CLI: channels, and a server taking what they receive', function () {
  this.timeout(90_000);
  const cli = cliInstall({ scribe: 'atlas' });
  const { admin, json, dir } = cli;

  it('creates webhook and email channels, prints them as docs/channels.md shows, and disables one', async () => {
    const hook = await json('channel', 'create', '--org', cli.orgId, '--scribe', 'atlas', '--kind', 'webhook', '--verify', 'github');
    expect(Object.keys(hook)).to.deep.equal(['id', 'url', 'secret']);
    expect(hook.url).to.match(/^\/inbound\/[A-Za-z0-9_-]{32}$/);
    expect(hook.secret).to.match(/^[0-9a-f]{64}$/);

    const open = await json('channel', 'create', '--org', cli.orgId, '--scribe', 'atlas', '--kind', 'webhook', '--mode', 'chat');
    expect(open.secret).to.equal(null);
    const given = await json('channel', 'create', '--org', cli.orgId, '--scribe', 'atlas', '--kind', 'webhook', '--verify', 'hmac-sha256', '--secret', 'my-own-secret-0123456789');
    expect(given.secret).to.equal('my-own-secret-0123456789');

    const mail = await json('channel', 'create', '--org', cli.orgId, '--scribe', 'atlas', '--kind', 'email', '--address', 'Atlas@Inbound.Example.com');
    expect(mail).to.deep.equal({ id: mail.id, address: 'atlas@inbound.example.com' });

    expect(await json('channel', 'disable', '--id', open.id)).to.deep.equal({ id: open.id, disabled: true });
    const listed = await json('channel', 'list', '--org', cli.orgId);
    expect(listed.channels.map((c: { id: string; enabled: boolean }) => [c.id, c.enabled])).to.deep.equal([
      [hook.id, true],
      [open.id, false],
      [given.id, true],
      [mail.id, true],
    ]);
    expect(JSON.stringify(listed)).not.to.include(hook.secret);
    expect(await json('channel', 'enable', '--id', open.id)).to.deep.equal({ id: open.id, enabled: true });

    const rotated = await json('channel', 'rotate-secret', '--id', hook.id);
    expect(rotated.secret)
      .to.match(/^[0-9a-f]{64}$/)
      .and.not.equal(hook.secret);

    const db = await openInstall(dir);
    try {
      const audit = await db('audit_events').where({ subject_type: 'channel', subject_id: open.id }).orderBy('id').select('actor_type', 'action');
      expect(audit).to.deep.equal([
        { actor_type: 'operator', action: 'channel.create' },
        { actor_type: 'operator', action: 'channel.disable' },
        { actor_type: 'operator', action: 'channel.enable' },
      ]);
    } finally {
      await db.destroy();
    }
  });

  for (const [args, message] of [
    [['channel', 'create', '--org', 'ORG', '--scribe', 'atlas', '--kind', 'fax'], 'Kind must be one of webhook, email'],
    [['channel', 'create', '--org', 'ORG', '--scribe', 'atlas', '--kind', 'email'], 'Address must be an email address, like atlas@inbound.example.com'],
    [['channel', 'create', '--org', 'ORG', '--scribe', 'nobody', '--kind', 'webhook'], 'Scribe not found'],
    [['channel', 'disable', '--id', '00000000-0000-4000-8000-000000000000'], 'Channel not found'],
  ] as const) {
    it(`refuses \`${args.slice(0, 2).join(' ')} … ${args.at(-1)}\` with "${message}", exit code 1`, async () => {
      const result = await admin(...args.map((a) => (a === 'ORG' ? cli.orgId : a)));
      expect(result.code).to.equal(1);
      expect(result.stderr).to.include(message);
      expect(result.stdout).to.equal('');
    });
  }

  it('answers a missing --kind with its usage error, exit code 2', async () => {
    const result = await admin('channel', 'create', '--org', cli.orgId, '--scribe', 'atlas');
    expect(result.code).to.equal(2);
    expect(result.stderr).to.include('--kind is required');
  });

  describe('a server on this install', () => {
    let server: ServerProcess;
    let smtpPort: number;
    before(async () => {
      server = await startProcess('src/main.ts', { ...cli.env, SMTP_PORT: '0', LOG_LEVEL: 'info' });
      smtpPort = Number(/"smtpPort":(\d+)/.exec(server.output())![1]);
    });
    after(async () => {
      server.child.kill('SIGTERM');
      expect(await server.exited).to.equal(0);
    });

    it('takes a signed webhook at the URL the CLI printed', async () => {
      const hook = await json('channel', 'create', '--org', cli.orgId, '--scribe', 'atlas', '--kind', 'webhook', '--verify', 'hmac-sha256');
      const body = JSON.stringify({ summary: 'From the CLI-made channel' });
      const res = await fetch(server.url + hook.url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Signature': `sha256=${createHmac('sha256', hook.secret).update(body).digest('hex')}` },
        body,
      });
      expect(res.status).to.equal(202);
      expect(Object.keys(await res.json())).to.deep.equal(['request_id']);
    });

    it('listens for mail on SMTP_PORT and makes a task of it', async () => {
      const mail = await json('channel', 'create', '--org', cli.orgId, '--scribe', 'atlas', '--kind', 'email', '--address', 'desk@inbound.example.com');
      const transport = nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true });
      await transport.sendMail({ from: 'ada@example.org', to: 'desk@inbound.example.com', subject: 'Through the server', text: 'Hello from SMTP' });
      const shown = await json('channel', 'show', '--id', mail.id);
      expect(shown.deliveries).to.have.length(1);
      expect(shown.deliveries[0]).to.include({ sender: 'ada@example.org', outcome: 'created', status: 250 });
      expect(shown.deliveries[0].request_id).to.match(/^req_/);
    });
  });
});
