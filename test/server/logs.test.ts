import { expect } from 'chai';
import supertest from 'supertest';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/knex.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { createLogger } from '../../src/logger.js';
import { createServices } from '../../src/services.js';
import { createApp } from '../../src/app.js';
import { tempDir } from '../helpers/harness.js';
import { csrfTokenOf } from '../helpers/console.js';
import { startFakeOpenAi } from '../helpers/fake-openai.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';
import { operatorActor } from '../../src/audit/service.js';
import { createHmac } from 'node:crypto';

describe('logs', () => {
  it('are JSON lines with the request id also sent in X-Request-Id, and never hold keys, passwords, cookies or tokens', async () => {
    const lines: string[] = [];
    const logger = createLogger('trace', { destination: { write: (line: string) => void lines.push(line) } });
    const config = loadConfig({ DATA_DIR: tempDir(), METRICS_TOKEN: 'metrics-token-secret', RATE_LIMIT_PER_MINUTE: '0' });
    const db = openDatabase(config.databaseUrl, { poolSize: config.databasePoolSize });
    await migrateToLatest(db);
    const services = createServices({ config, db, logger, options: { runOnNewWork: false } });
    const app = createApp({ config, logger, services, sessionSecret: 'log-test-session-secret' });
    try {
      const org = await services.organizations.createOrganization({ name: 'Logs' });
      const { key } = await services.organizations.createApiKey({ organizationId: org.id });
      await services.scribes.create({ organizationId: org.id, slug: 'atlas', name: 'Atlas' });
      await services.users.create({ organizationId: org.id, email: 'staff@example.com', password: 'hunter2-password', role: 'admin' });

      const api = supertest(app);
      const submit = await api
        .post('/api/v1/scribes/atlas/requests')
        .set('X-Api-Key', key)
        .set('X-Request-Id', 'trace-me-123')
        .send({ task: { summary: 'logged' } });
      expect(submit.headers['x-request-id']).to.equal('trace-me-123');
      await api.get('/api/v1/requests/req_01JD0000000000000000000000').set('X-Api-Key', 'sk_not_a_real_key_but_secret');
      await api.get('/metrics').set('Authorization', 'Bearer metrics-token-secret');
      const agent = supertest.agent(app);
      const login = await agent.get('/login');
      const signedIn = await agent
        .post('/login')
        .type('form')
        .send({ _csrf: csrfTokenOf(login.text), email: 'staff@example.com', password: 'hunter2-password' });
      const cookie = String(signedIn.headers['set-cookie']).split(';')[0]!.split('=')[1]!;
      await agent.get('/');
      // A console page refreshing itself logs at debug, not info.
      await agent.get('/').set('X-Live-Refresh', '1').set('X-Request-Id', 'live-refresh-1');
      // An invitation's link, opened and used: its token is as good as a password.
      const invited = await services.users.invite(operatorActor(org.id), { email: 'invitee@example.com' });
      const token = invited.url.split('/').pop()!;
      const invitee = supertest.agent(app);
      const form = await invitee.get(invited.url).expect(200);
      await invitee.get(invited.url.replace('/invite/', '/INVITE/')).expect(200);
      await invitee
        .post(invited.url)
        .type('form')
        .send({ _csrf: csrfTokenOf(form.text), password: 'invitee-password-9', confirmation: 'invitee-password-9' })
        .expect(303);
      // Something goes wrong with details attached, as a failing call would log them.
      logger.error(
        { req: { headers: { 'x-api-key': key, cookie: `scribe.sid=${cookie}`, authorization: 'Bearer metrics-token-secret' } }, user: { password: 'hunter2-password' } },
        'with secrets attached',
      );

      const text = lines.join('');
      for (const secret of [key, 'sk_not_a_real_key_but_secret', 'hunter2-password', 'metrics-token-secret', cookie, token, 'invitee-password-9'])
        expect(text, secret).to.not.include(secret);
      const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      const completed = parsed.find((l) => l.requestId === 'trace-me-123' && l.msg === 'request completed');
      expect(completed).to.include({ method: 'POST', path: '/api/v1/scribes/atlas/requests', status: 202 });
      expect(parsed.find((l) => l.msg === 'with secrets attached')).to.deep.include({ user: { password: '[redacted]' } });
      expect(parsed.find((l) => l.requestId === 'live-refresh-1')).to.include({ level: 20, msg: 'request completed' });
      expect(parsed.filter((l) => /^\/invite\//i.test(String(l.path))).map((l) => [l.method, l.path, l.status])).to.deep.equal([
        ['GET', '/invite/[redacted]', 200],
        ['GET', '/INVITE/[redacted]', 200],
        ['POST', '/invite/[redacted]', 303],
      ]);
    } finally {
      await services.stop();
      await db.destroy();
    }
  });

  it('never hold a model key, MCP headers, or webhook and channel secrets, at trace level through agent work and deliveries', async () => {
    const lines: string[] = [];
    const logger = createLogger('trace', { destination: { write: (line: string) => void lines.push(line) } });
    const fake = await startFakeOpenAi();
    const mcp = await startMcpServer();
    const receiver = await startWebhookReceiver();
    const config = loadConfig({
      DATA_DIR: tempDir(),
      RATE_LIMIT_PER_MINUTE: '0',
      WEBHOOKS_ALLOW_PRIVATE: 'true',
      ATTACHMENTS_ALLOW_PRIVATE: 'true',
      OPENAI_BASE_URL: fake.baseUrl,
      OPENAI_MODEL: 'm',
    });
    const db = openDatabase(config.databaseUrl, { poolSize: config.databasePoolSize });
    await migrateToLatest(db);
    const services = createServices({ config, db, logger, options: { runOnNewWork: false, dispatchOnAccept: false } });
    const app = createApp({ config, logger, services, sessionSecret: 'log-test-session-secret' });
    try {
      const org = await services.organizations.createOrganization({ name: 'Secrets' });
      const actor = operatorActor(org.id);
      const { key } = await services.organizations.createApiKey({ organizationId: org.id });
      await services.scribes.create({ organizationId: org.id, slug: 'atlas', name: 'Atlas', agent: 'openai' });
      await services.scribes.setAgent(org.id, 'atlas', { apiKey: 'sk-model-key-in-logs-test' });
      await services.mcpServers.add(actor, 'atlas', { url: mcp.url, headers: ['Authorization: Bearer mcp-header-in-logs-test'] });
      const { secret: webhookSecret } = await services.webhooks.create(actor, { url: receiver.url });
      const { channel, secret: channelSecret } = await services.channels.create(actor, 'atlas', { kind: 'webhook', verify: 'hmac-sha256' });

      fake.script({ toolCalls: [{ name: 'mcp1_add', arguments: { a: 1, b: 2 } }] }, { reply: 'Three.' });
      const api = supertest(app);
      await api.post('/api/v1/scribes/atlas/chat').set('X-Api-Key', key).send({ message: 'one plus two?' }).expect(202);
      await services.runtime.tick();
      const body = '{"summary":"from a signed sender"}';
      await api
        .post(`/inbound/${channel.token}`)
        .type('json')
        .set('X-Signature', `sha256=${createHmac('sha256', channelSecret!).update(body).digest('hex')}`)
        .send(body)
        .expect(202);
      await api.post(`/inbound/${channel.token}`).type('json').set('X-Signature', 'sha256=00').send(body).expect(401);
      // Routes match whatever the letter case: so does the redaction of the token in the path.
      await api.post(`/Inbound/${channel.token}?from=test`).type('json').set('X-Signature', 'sha256=00').send(body).expect(401);
      await services.dispatcher.tick();
      await services.webhookWorker.tick();
      expect(receiver.received.length, 'the webhook was sent').to.be.greaterThan(0);
      expect(mcp.calls, 'the MCP tool was called').to.have.length(1);

      const text = lines.join('');
      // The channel's token is in its URL: whoever holds that may send to the scribe.
      for (const secret of ['sk-model-key-in-logs-test', 'mcp-header-in-logs-test', webhookSecret, webhookSecret.slice('whsec_'.length), channelSecret!, channel.token!])
        expect(text, secret).to.not.include(secret);
      const inbound = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => /^\/inbound\//i.test(String(l.path)));
      expect(inbound.map((l) => [l.path, l.status])).to.deep.equal([
        ['/inbound/[redacted]', 202],
        ['/inbound/[redacted]', 401],
        ['/Inbound/[redacted]?from=test', 401],
      ]);
    } finally {
      await services.stop();
      await db.destroy();
      await Promise.all([fake.close(), mcp.close(), receiver.close()]);
    }
  });
});
