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
      const submit = await api.post('/api/v1/scribes/atlas/requests').set('X-Api-Key', key).set('X-Request-Id', 'trace-me-123').send({ task: { summary: 'logged' } });
      expect(submit.headers['x-request-id']).to.equal('trace-me-123');
      await api.get('/api/v1/requests/req_01JD0000000000000000000000').set('X-Api-Key', 'sk_not_a_real_key_but_secret');
      await api.get('/metrics').set('Authorization', 'Bearer metrics-token-secret');
      const agent = supertest.agent(app);
      const login = await agent.get('/login');
      const signedIn = await agent.post('/login').type('form').send({ _csrf: csrfTokenOf(login.text), email: 'staff@example.com', password: 'hunter2-password' });
      const cookie = String(signedIn.headers['set-cookie']).split(';')[0]!.split('=')[1]!;
      await agent.get('/');
      // Something goes wrong with details attached, as a failing call would log them.
      logger.error({ req: { headers: { 'x-api-key': key, cookie: `scribe.sid=${cookie}`, authorization: 'Bearer metrics-token-secret' } }, user: { password: 'hunter2-password' } }, 'with secrets attached');

      const text = lines.join('');
      for (const secret of [key, 'sk_not_a_real_key_but_secret', 'hunter2-password', 'metrics-token-secret', cookie]) expect(text, secret).to.not.include(secret);
      const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      const completed = parsed.find((l) => l.requestId === 'trace-me-123' && l.msg === 'request completed');
      expect(completed).to.include({ method: 'POST', path: '/api/v1/scribes/atlas/requests', status: 202 });
      expect(parsed.find((l) => l.msg === 'with secrets attached')).to.deep.include({ user: { password: '[redacted]' } });
    } finally {
      await services.stop();
      await db.destroy();
    }
  });
});
