import { expect } from 'chai';
import supertest from 'supertest';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { PASSWORD, csrfTokenOf, signIn, type ConsoleClient } from '../helpers/console.js';

/** One of everything, in one organization, for the pages to show. */
async function populate(h: Harness, t: Tenant) {
  const submit = await h.api
    .post(`/api/v1/scribes/${t.scribe.slug}/requests`)
    .set(t.headers)
    .send({ task: { summary: 'Which vendor is cheapest?' } });
  await h.services.dispatcher.tick();
  await h.services.runtime.tick();
  const receipt = (await h.api.get(`/api/v1/requests/${submit.body.request.id}`).set(t.headers)).body.request;
  const chat = await h.api.post(`/api/v1/scribes/${t.scribe.slug}/chat`).set(t.headers).send({ message: 'hello' });
  await h.services.runtime.tick();
  const type = await h.services.entryTypes.create(t.organizationId, { name: 'Companies', fields: [{ name: 'Name', type: 'text', primary: true }] });
  const entry = await h.services.entries.create(t.organizationId, type.id, { fields: { Name: 'Acme' } });
  const key = await h.services.organizations.createApiKey({ organizationId: t.organizationId, name: 'extra' });
  return { receiptId: receipt.id as string, taskId: receipt.entity_id as string, sessionId: chat.body.session_id as string, typeId: type.id, entryId: entry.id, keyId: key.id };
}

describe('console access', () => {
  let h: Harness;
  let t: Tenant;
  let ids: Awaited<ReturnType<typeof populate>>;
  before(async () => {
    h = await createHarness({ options: { runOnNewWork: false, dispatchOnAccept: false }, consoleOptions: { loginAttempts: 3 } });
    t = await h.tenant();
    ids = await populate(h, t);
  });
  after(() => h.close());

  const pages = () => [
    '/',
    '/scribes',
    `/b/${t.scribe.slug}`,
    `/b/${t.scribe.slug}/settings`,
    '/receipts',
    `/receipts/${ids.receiptId}`,
    '/tasks',
    `/tasks/${ids.taskId}`,
    `/sessions/${ids.sessionId}`,
    '/entry-types',
    `/entry-types/${ids.typeId}`,
    `/entries/${ids.entryId}`,
    `/entries/${ids.entryId}/edit`,
    `/entry-types/${ids.typeId}/new`,
    `/entry-types/${ids.typeId}/edit`,
    '/keys',
    '/audit',
  ];

  describe('signed out', () => {
    it('sends a visitor of / to /login', async () => {
      const res = await h.api.get('/');
      expect(res.status).to.equal(303);
      expect(res.headers.location).to.equal('/login');
    });

    it('sends a visitor of every page to /login, to come back after signing in', async () => {
      for (const path of pages()) {
        const res = await h.api.get(path);
        expect(res.status, path).to.equal(303);
        if (path !== '/') expect(res.headers.location, path).to.equal(`/login?next=${encodeURIComponent(path)}`);
      }
    });

    it('serves the sign-in form with email, password and a hidden CSRF field, and the stylesheet', async () => {
      const res = await h.api.get('/login');
      expect(res.status).to.equal(200);
      expect(res.headers['content-type']).to.match(/^text\/html/);
      expect(res.text)
        .to.match(/<input[^>]+name="email"/)
        .and.match(/<input[^>]+name="password"[^>]+type="password"|<input[^>]+type="password"[^>]+name="password"/);
      expect(csrfTokenOf(res.text)).to.have.length.greaterThan(20);
      expect((await h.api.get('/assets/console.css')).status).to.equal(200);
      expect((await h.api.get('/assets/nope.css')).status).to.equal(404);
    });

    it('refuses any change without a signed-in session', async () => {
      const before = await h.db('scribes').where({ id: t.scribe.id }).first();
      const res = await h.api.post(`/b/${t.scribe.slug}/state`).type('form').send({ state: 'powered_off' });
      expect(res.status).to.equal(403);
      expect(await h.db('scribes').where({ id: t.scribe.id }).first()).to.deep.equal(before);
    });
  });

  describe('signing in and out', () => {
    it('answers a wrong password or an unknown email with 401 and one message, keeping the email typed', async () => {
      await h.services.users.create({ organizationId: t.organizationId, email: 'known@example.com', password: PASSWORD });
      for (const [email, password] of [
        ['known@example.com', 'wrong password'],
        ['nobody@example.com', PASSWORD],
      ]) {
        const agent = supertest.agent(h.app);
        const token = csrfTokenOf((await agent.get('/login')).text);
        const res = await agent.post('/login').type('form').send({ _csrf: token, email, password });
        expect(res.status).to.equal(401);
        expect(res.text).to.include('Email or password is wrong.').and.include(`value="${email}"`);
      }
    });

    it('answers 400 for a form field holding U+0000 (which no database stores), signing no one in', async () => {
      const agent = supertest.agent(h.app);
      const token = csrfTokenOf((await agent.get('/login')).text);
      const res = await agent.post('/login').type('form').send({ _csrf: token, email: 'known@example.com\u0000', password: PASSWORD });
      expect(res.status).to.equal(400);
      expect(res.text).to.include('Form fields must not contain U+0000');
      expect((await agent.get('/scribes')).headers.location, 'still signed out').to.match(/^\/login/);
    });

    it('regenerates the session at sign-in, sets a httpOnly SameSite=Lax cookie, and ends it at sign-out', async () => {
      await h.services.users.create({ organizationId: t.organizationId, email: 'cookie@example.com', password: PASSWORD });
      const agent = supertest.agent(h.app);
      const page = await agent.get('/login');
      const before = cookieOf(page.headers['set-cookie']);
      expect(before)
        .to.match(/HttpOnly/i)
        .and.match(/SameSite=Lax/i)
        .and.not.match(/Secure/i);
      const res = await agent
        .post('/login')
        .type('form')
        .send({ _csrf: csrfTokenOf(page.text), email: 'cookie@example.com', password: PASSWORD, next: '/keys' });
      expect(res.status).to.equal(303);
      expect(res.headers.location).to.equal('/keys');
      const after = cookieOf(res.headers['set-cookie']);
      expect(sid(after)).to.not.equal(sid(before));
      expect(
        await h
          .db('console_sessions')
          .where({ sid: decodeURIComponent(sid(before)).slice(2).split('.')[0] })
          .first(),
        'the old session is gone',
      ).to.equal(undefined);
      expect((await agent.get('/keys')).status).to.equal(200);

      const keys = await agent.get('/keys');
      const out = await agent
        .post('/logout')
        .type('form')
        .send({ _csrf: csrfTokenOf(keys.text) });
      expect(out.status).to.equal(303);
      expect(out.headers.location).to.equal('/login');
      expect((await agent.get('/keys')).status).to.equal(303);
    });

    it('lets no browser or cache keep a page: every page answers Cache-Control: no-store, signed in or not', async () => {
      const admin = await signIn(h, t, 'admin');
      for (const path of [...pages(), '/users', '/webhooks', '/channels', '/schedules', '/sessions', '/account']) {
        const res = await admin.get(path);
        expect([res.status, res.headers['cache-control']], path).to.deep.equal([200, 'no-store']);
      }
      const signedOut = supertest(h.app);
      expect((await signedOut.get('/login')).headers['cache-control']).to.equal('no-store');
      expect((await signedOut.get('/keys')).headers['cache-control']).to.equal('no-store');
      // The console's own files are kept a while.
      expect((await signedOut.get('/assets/console.css')).headers['cache-control']).to.equal('public, max-age=3600');
    });

    it('never sends a signed-in user to another site after sign-in', async () => {
      await h.services.users.create({ organizationId: t.organizationId, email: 'next@example.com', password: PASSWORD });
      for (const next of ['//evil.example/x', 'https://evil.example/', '/\\evil.example']) {
        const agent = supertest.agent(h.app);
        const token = csrfTokenOf((await agent.get('/login')).text);
        const res = await agent.post('/login').type('form').send({ _csrf: token, email: 'next@example.com', password: PASSWORD, next });
        expect(res.headers.location, next).to.equal('/');
      }
    });

    it('marks the cookie Secure when the request came over HTTPS through a trusted proxy', async () => {
      const proxied = await createHarness({ env: { TRUST_PROXY: '1' } });
      try {
        const res = await proxied.api.get('/login').set('X-Forwarded-Proto', 'https');
        expect(cookieOf(res.headers['set-cookie'])).to.match(/;\s*Secure/i);
      } finally {
        await proxied.close();
      }
    });

    it('throttles sign-in per address across emails too', async () => {
      const strict = await createHarness({ consoleOptions: { loginAttempts: 100, loginAttemptsPerAddress: 4 } });
      try {
        const agent = supertest.agent(strict.app);
        const token = csrfTokenOf((await agent.get('/login')).text);
        for (let i = 0; i < 4; i++)
          expect(
            (
              await agent
                .post('/login')
                .type('form')
                .send({ _csrf: token, email: `guess${i}@example.com`, password: 'x' })
            ).status,
          ).to.equal(401);
        const blocked = await agent.post('/login').type('form').send({ _csrf: token, email: 'another@example.com', password: 'x' });
        expect(blocked.status).to.equal(429);
        expect(blocked.text).to.include('Too many sign-in attempts.');
      } finally {
        await strict.close();
      }
    });

    it('throttles sign-in after repeated failures for one address and email, with RateLimit headers', async () => {
      await h.services.users.create({ organizationId: t.organizationId, email: 'throttled@example.com', password: PASSWORD });
      const agent = supertest.agent(h.app);
      const token = csrfTokenOf((await agent.get('/login')).text);
      const attempt = (password: string) => agent.post('/login').type('form').send({ _csrf: token, email: 'throttled@example.com', password });
      for (let i = 0; i < 3; i++) expect((await attempt('nope')).status).to.equal(401);
      const blocked = await attempt(PASSWORD);
      expect(blocked.status).to.equal(429);
      expect(blocked.text).to.include('Too many sign-in attempts.');
      expect(blocked.headers).to.have.property('ratelimit');
      expect(blocked.headers).to.have.property('retry-after');
      // Another email from the same address is not held up by it.
      await h.services.users.create({ organizationId: t.organizationId, email: 'free@example.com', password: PASSWORD });
      expect((await agent.post('/login').type('form').send({ _csrf: token, email: 'free@example.com', password: PASSWORD })).status).to.equal(303);
    });
  });

  describe('CSRF', () => {
    let admin: ConsoleClient;
    before(async () => {
      admin = await signIn(h, t, 'admin');
    });

    for (const [what, token] of [
      ['missing', undefined],
      ['wrong', 'not-the-token'],
      ['empty', ''],
    ] as const) {
      it(`refuses a form with a ${what} token, changing nothing`, async () => {
        const before = await h.db('scribes').where({ id: t.scribe.id }).first();
        const form: Record<string, string> = { state: 'powered_off' };
        if (token !== undefined) form._csrf = token;
        const res = await admin.agent.post(`/b/${t.scribe.slug}/state`).type('form').send(form);
        expect(res.status).to.equal(403);
        expect(res.text).to.include('The form has expired or did not come from this console.');
        expect(await h.db('scribes').where({ id: t.scribe.id }).first()).to.deep.equal(before);
      });
    }

    it('refuses the token of another session', async () => {
      const other = await signIn(h, t, 'admin');
      const res = await admin.agent
        .post('/keys')
        .type('form')
        .send({ _csrf: await other.token(), name: 'stolen' });
      expect(res.status).to.equal(403);
      expect(await h.db('api_keys').where({ name: 'stolen' }).first()).to.equal(undefined);
    });

    it('puts a token in every form of every page', async () => {
      for (const path of pages()) {
        const res = await admin.get(path);
        expect(res.status, path).to.equal(200);
        const posts = res.text.match(/<form[^>]*method="post"[\s\S]*?<\/form>/g) ?? [];
        for (const form of posts) expect(form, `${path}: ${form.slice(0, 80)}`).to.include('name="_csrf"');
      }
    });
  });

  describe('roles', () => {
    it('lets a viewer read every page but shows no forms that change things', async () => {
      const viewer = await signIn(h, t, 'viewer');
      for (const path of pages()) {
        const res = await viewer.get(path);
        if (path.endsWith('/edit') || path.endsWith('/new')) {
          expect(res.status, path).to.equal(403);
          continue;
        }
        expect(res.status, path).to.equal(200);
        const actions = [...res.text.matchAll(/<form[^>]*method="post"[^>]*action="([^"]+)"/g)].map((m) => m[1]);
        expect(actions, path).to.deep.equal(['/logout']);
      }
    });

    it('refuses every change a viewer attempts, changing nothing', async () => {
      const viewer = await signIn(h, t, 'viewer');
      const waiting = (await h.db('tasks').where({ id: ids.taskId }).first()).status;
      expect(waiting).to.equal('waiting');
      const counts = async () => ({
        audit: (await h.db('audit_events').count({ n: '*' }).first())!.n,
        keys: (await h.db('api_keys').count({ n: '*' }).first())!.n,
        entries: (await h.db('entries').count({ n: '*' }).first())!.n,
        types: (await h.db('entry_types').count({ n: '*' }).first())!.n,
        scribe: await h.db('scribes').where({ id: t.scribe.id }).first(),
        task: await h.db('tasks').where({ id: ids.taskId }).first(),
        messages: (await h.db('session_messages').count({ n: '*' }).first())!.n,
        revoked: (await h.db('api_keys').where({ id: ids.keyId }).first()).revoked_at,
      });
      const before = await counts();
      const attempts: Array<[string, Record<string, string>]> = [
        [`/b/${t.scribe.slug}/state`, { state: 'powered_off' }],
        [`/b/${t.scribe.slug}/agent`, { agent: 'openai', instructions: 'x' }],
        ['/keys', { name: 'mine' }],
        [`/keys/${ids.keyId}/revoke`, {}],
        [`/tasks/${ids.taskId}/input`, { text: 'do it' }],
        [`/sessions/${ids.sessionId}/reply`, { text: 'hi' }],
        ['/entry-types', { name: 'Things', name_0: 'Name', type_0: 'text', primary: '0' }],
        [`/entry-types/${ids.typeId}/entries`, { f_0: 'New Co' }],
        [`/entries/${ids.entryId}`, { f_0: 'Renamed' }],
        [`/entry-types/${ids.typeId}`, { name: 'Renamed type' }],
      ];
      for (const [path, form] of attempts) {
        const res = await viewer.post(path, form);
        expect(res.status, path).to.equal(403);
        expect(res.text, path).to.include('Only admins can change this.');
      }
      expect(await counts()).to.deep.equal(before);
    });
  });

  describe('other organizations', () => {
    it('answers 404 for every object of another organization, and changes none of them', async () => {
      const other = await h.tenant({ slug: 'elsewhere' });
      const theirs = await populate(h, other);
      const admin = await signIn(h, t, 'admin');
      const reads = [
        `/b/${other.scribe.slug}`,
        `/b/${other.scribe.slug}/settings`,
        `/receipts/${theirs.receiptId}`,
        `/tasks/${theirs.taskId}`,
        `/sessions/${theirs.sessionId}`,
        `/entry-types/${theirs.typeId}`,
        `/entries/${theirs.entryId}`,
        `/entries/${theirs.entryId}/edit`,
        `/entry-types/${theirs.typeId}/new`,
        `/entry-types/${theirs.typeId}/edit`,
        `/receipts/${theirs.receiptId}/attachments/0`,
      ];
      for (const path of reads) {
        const res = await admin.get(path);
        expect(res.status, path).to.equal(404);
        expect(res.text).to.include('Not found');
      }
      const writes: Array<[string, Record<string, string>]> = [
        [`/b/${other.scribe.slug}/state`, { state: 'powered_off' }],
        [`/keys/${theirs.keyId}/revoke`, {}],
        [`/tasks/${theirs.taskId}/input`, { text: 'x' }],
        [`/sessions/${theirs.sessionId}/reply`, { text: 'x' }],
        [`/entries/${theirs.entryId}`, { f_0: 'Mine now' }],
        [`/entry-types/${theirs.typeId}/entries`, { f_0: 'Mine' }],
        [`/entry-types/${theirs.typeId}`, { name: 'Mine' }],
      ];
      for (const [path, form] of writes) expect((await admin.post(path, form)).status, path).to.equal(404);
      expect((await h.db('scribes').where({ id: other.scribe.id }).first()).state).to.equal('active');
      expect((await h.db('api_keys').where({ id: theirs.keyId }).first()).revoked_at).to.equal(null);
      expect((await h.db('tasks').where({ id: theirs.taskId }).first()).status).to.equal('waiting');
      expect(JSON.parse((await h.db('entries').where({ id: theirs.entryId }).first()).fields)).to.deep.equal({ Name: 'Acme' });
      // Their data never shows in our lists either.
      for (const path of ['/receipts', '/tasks', '/scribes', '/entry-types', '/keys', '/audit']) {
        const res = await admin.get(path);
        expect(res.text, path).to.not.include(other.scribe.slug).and.not.include(theirs.receiptId);
      }
    });
  });
});

function cookieOf(header: string[] | string | undefined): string {
  const cookies = Array.isArray(header) ? header : header ? [header] : [];
  const cookie = cookies.find((c) => c.startsWith('scribe.sid='));
  if (!cookie) throw new Error('no session cookie');
  return cookie;
}

function sid(cookie: string): string {
  return cookie.split(';')[0]!.slice('scribe.sid='.length);
}
