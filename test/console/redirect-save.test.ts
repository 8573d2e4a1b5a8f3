import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { createApp } from '../../src/app.js';
import { createLogger } from '../../src/logger.js';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { PASSWORD, csrfTokenOf } from '../helpers/console.js';

/**
 * A browser follows a redirect as soon as it has the status and Location, before the
 * response ends. express-session saves a changed session at the end, so a redirect must not
 * be sent before that save: the next request would read the session without the sign-in or
 * the form's message. The store here takes 300 ms to save, which makes that gap wide.
 */
describe('console redirects wait for the session to be stored', () => {
  let h: Harness;
  let t: Tenant;
  let server: http.Server;
  let base: string;

  before(async () => {
    h = await createHarness({ options: { runOnNewWork: false, dispatchOnAccept: false } });
    t = await h.tenant();
    await h.services.users.create({ organizationId: t.organizationId, email: 'slow@example.com', password: PASSWORD, role: 'admin' });
    const consoleSessionStore = () => {
      const store = h.services.consoleSessionStore();
      const set = store.set.bind(store);
      store.set = async (sid, session, callback) => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        return set(sid, session, callback);
      };
      return store;
    };
    const app = createApp({
      config: h.config,
      logger: createLogger('silent'),
      services: { ...h.services, consoleSessionStore },
      sessionSecret: 'test-session-secret-of-some-length',
    });
    server = http.createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise((resolve) => server.close(resolve));
    await h.close();
  });

  /** Sends a request and answers with its status, headers and what the session table holds the moment the headers arrive. */
  function request(method: string, path: string, cookie: string, form?: Record<string, string>) {
    return new Promise<{ status: number; headers: http.IncomingHttpHeaders; sessions: Array<Record<string, unknown>> }>((resolve, reject) => {
      const body = form && new URLSearchParams(form).toString();
      const req = http.request(`${base}${path}`, { method, headers: { cookie, ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) } }, (res) => {
        void h
          .db('console_sessions')
          .select('sess')
          .then((rows: Array<{ sess: unknown }>) => {
            res.resume();
            // Text on SQLite, json (already parsed) on PostgreSQL.
            const sessions = rows.map(({ sess }) => (typeof sess === 'string' ? JSON.parse(sess) : sess) as Record<string, unknown>);
            resolve({ status: res.statusCode!, headers: res.headers, sessions });
          }, reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  it('stores the sign-in, then redirects', async () => {
    const login = await fetch(`${base}/login`);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const res = await request('POST', '/login', cookie, { _csrf: csrfTokenOf(await login.text()), email: 'slow@example.com', password: PASSWORD });
    expect(res.status).to.equal(303);
    expect(res.sessions.map((s) => s.userId).filter(Boolean), 'the signed-in session, stored before the 303').to.have.length(1);
  });

  it("stores a form's message, then redirects", async () => {
    const login = await fetch(`${base}/login`);
    let cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const signedIn = await request('POST', '/login', cookie, { _csrf: csrfTokenOf(await login.text()), email: 'slow@example.com', password: PASSWORD });
    cookie = String(signedIn.headers['set-cookie']![0]).split(';')[0]!;
    const keys = await fetch(`${base}/keys`, { headers: { cookie } });
    const res = await request('POST', `/keys/${t.keyId}/revoke`, cookie, { _csrf: csrfTokenOf(await keys.text()) });
    expect(res.status).to.equal(303);
    expect(res.sessions.map((s) => s.flash).filter(Boolean), 'the message, stored before the 303').to.have.length(1);
  });
});
