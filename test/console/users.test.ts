import { expect } from 'chai';
import supertest from 'supertest';
import { createApp } from '../../src/app.js';
import { openDatabase } from '../../src/db/knex.js';
import { createLogger } from '../../src/logger.js';
import { createServices } from '../../src/services.js';
import { operatorActor } from '../../src/audit/service.js';
import { verifyPassword } from '../../src/users/passwords.js';
import { createHarness, testClock, type Harness, type Tenant } from '../helpers/harness.js';
import { PASSWORD, csrfTokenOf, signIn, type ConsoleClient } from '../helpers/console.js';

const LAST_ADMIN = 'An organization needs an active admin';
const WEEK_MS = 7 * 24 * 3_600_000;

/** The link on the Users page after an invitation or a reset: shown once, in that response. */
function shownLink(html: string): string {
  const match = /<code class="key" id="new-link">([^<]+)<\/code>/.exec(html);
  if (!match) throw new Error('no link on the page');
  return match[1]!;
}

/** A fresh visitor's answer to setting a password at `link`: the form's CSRF token, then the POST. */
async function accept(h: Harness, link: string, password: string, confirmation = password) {
  const visitor = supertest.agent(h.app);
  const form = await visitor.get(link);
  const token = form.status === 200 ? csrfTokenOf(form.text) : csrfTokenOf((await visitor.get('/login')).text);
  const res = await visitor.post(link).type('form').send({ _csrf: token, password, confirmation });
  return { visitor, form, res };
}

/** Signs in through the login form; the status it answers (303 when signed in). */
async function signInStatus(h: Harness, email: string, password: string): Promise<number> {
  const agent = supertest.agent(h.app);
  const token = csrfTokenOf((await agent.get('/login')).text);
  return (await agent.post('/login').type('form').send({ _csrf: token, email, password })).status;
}

describe('console users', () => {
  let h: Harness;
  let t: Tenant;
  let admin: ConsoleClient;
  const clock = testClock();
  before(async () => {
    h = await createHarness({ options: { runOnNewWork: false, dispatchOnAccept: false, clock } });
    t = await h.tenant();
    admin = await signIn(h, t, 'admin');
  });
  after(() => h.close());

  const invite = async (email: string, role = 'viewer') => {
    const res = await admin.post('/users', { email, role });
    expect(res.status, res.text.slice(0, 300)).to.equal(200);
    expect(res.headers['cache-control']).to.equal('no-store');
    return shownLink(res.text);
  };
  const userByEmail = (email: string) => h.db('users').where({ email }).first();

  describe('invitations', () => {
    it('lists an invited user as invited, and sets their password once at the link, signing them in', async () => {
      const link = await invite('new.viewer@example.com');
      expect(link).to.match(/^\/invite\/[A-Za-z0-9_-]{43}$/);
      const listed = await admin.get('/users');
      expect(listed.text).to.include('new.viewer@example.com').and.include('>invited<');
      expect(listed.text, 'the link is shown only once').not.to.include(link);

      const { visitor, form, res } = await accept(h, link, 'a fine new password');
      expect(form.status).to.equal(200);
      expect(form.text).to.include('Welcome to Scribe').and.include('new.viewer@example.com');
      expect(res.status).to.equal(303);
      expect(res.headers.location).to.equal('/');
      const home = await visitor.get('/');
      expect(home.status).to.equal(200);
      expect(home.text).to.include('new.viewer@example.com');
      const user = await userByEmail('new.viewer@example.com');
      expect(await verifyPassword('a fine new password', user.password_hash)).to.equal(true);
      expect(user.last_sign_in_at).to.equal(clock().toISOString());
      expect((await admin.get('/users')).text).not.to.include('>invited<');

      const again = await accept(h, link, 'another password');
      expect(again.form.status).to.equal(410);
      expect(again.form.text).to.include('This link was already used.');
      expect(again.res.status).to.equal(410);
      expect(await verifyPassword('a fine new password', (await userByEmail('new.viewer@example.com')).password_hash)).to.equal(true);
    });

    it('keeps only the hash of the token, and no token or password in the audit log', async () => {
      const link = await invite('hashed@example.com', 'admin');
      const token = link.split('/').pop()!;
      const user = await userByEmail('hashed@example.com');
      const stored = await h.db('password_links').where({ user_id: user.id }).first();
      expect(stored.token_hash)
        .to.match(/^[0-9a-f]{64}$/)
        .and.not.equal(token);
      expect(JSON.stringify(await h.db('password_links'))).not.to.include(token);
      await accept(h, link, 'secret password 42');
      const audit = JSON.stringify(await h.db('audit_events').where({ organization_id: t.organizationId }));
      expect(audit).to.include('user.invite').and.include('user.accept_invite');
      expect(audit).not.to.include(token).and.not.include('secret password 42');
    });

    it('refuses an expired link with a clear page', async () => {
      const link = await invite('late@example.com');
      clock.advance(WEEK_MS);
      try {
        const { form, res } = await accept(h, link, 'too late password');
        expect(form.status).to.equal(410);
        expect(form.text).to.include('This link has expired: links are valid for 7 days. Ask an admin for a new one.');
        expect(res.status).to.equal(410);
        expect((await userByEmail('late@example.com')).password_hash).to.equal('');
      } finally {
        clock.advance(-WEEK_MS);
      }
    });

    it('answers 410 "This link is not valid" for an unknown token', async () => {
      const res = await supertest(h.app).get('/invite/not-a-real-token');
      expect(res.status).to.equal(410);
      expect(res.text).to.include('This link is not valid');
    });

    it('answers 422 for a short or mismatched password and leaves the link usable', async () => {
      const link = await invite('typo@example.com');
      const short = await accept(h, link, 'short');
      expect(short.res.status).to.equal(422);
      expect(short.res.text).to.include('Password must be at least 8 characters');
      const differ = await accept(h, link, 'long enough one', 'long enough two');
      expect(differ.res.status).to.equal(422);
      expect(differ.res.text).to.include('The two new passwords do not match');
      expect((await accept(h, link, 'long enough one')).res.status).to.equal(303);
    });

    it('makes the link absolute with PUBLIC_URL', async () => {
      const other = await createHarness({ env: { PUBLIC_URL: 'https://scribe.example.com/' } });
      try {
        const org = await other.tenant();
        const invited = await other.services.users.invite(operatorActor(org.organizationId), { email: 'abs@example.com' });
        expect(invited.url).to.match(/^https:\/\/scribe\.example\.com\/invite\/[A-Za-z0-9_-]{43}$/);
      } finally {
        await other.close();
      }
    });

    it('refuses an invitation for an email already used, keeping the form as typed', async () => {
      const res = await admin.post('/users', { email: admin.email, role: 'admin' });
      expect(res.status).to.equal(422);
      expect(res.text).to.include('Email is already used by another user');
      expect(res.text).not.to.include('id="new-link"');
    });

    it("refuses an email that is no address or over 320 characters (its column's size), keeping the form as typed and inviting no one", async () => {
      const before = await h.db('users').count({ n: '*' }).first();
      for (const [email, message] of [
        ['not an address', 'Email is not a valid address'],
        [`${'e'.repeat(315)}@x.com`, 'Email must be at most 320 characters'],
      ] as const) {
        const res = await admin.post('/users', { email, role: 'viewer' });
        expect([res.status, res.text.includes(message), res.text.includes(`value="${email}"`)], email.slice(0, 20)).to.deep.equal([422, true, true]);
      }
      expect(await h.db('users').count({ n: '*' }).first()).to.deep.equal(before);
    });
  });

  describe('resets', () => {
    it("gives a one-time link that sets a new password, ending the user's older sessions; the old password works until then", async () => {
      const viewer = await signIn(h, t, 'viewer');
      const { id } = await userByEmail(viewer.email);
      const res = await admin.post(`/users/${id}/reset`);
      expect(res.status).to.equal(200);
      const link = shownLink(res.text);
      expect(await signInStatus(h, viewer.email, PASSWORD)).to.equal(303);
      clock.advance(1000);
      const { visitor, form, res: set } = await accept(h, link, 'brand new password');
      expect(form.text).to.include('Set a new password');
      expect(set.status).to.equal(303);
      // The session the link signed in stays; the one signed in with the old password ends.
      expect((await visitor.get('/scribes')).status).to.equal(200);
      expect((await viewer.get('/scribes')).status).to.equal(303);
      expect(await signInStatus(h, viewer.email, PASSWORD)).to.equal(401);
      expect(await signInStatus(h, viewer.email, 'brand new password')).to.equal(303);
      expect((await accept(h, link, 'third password')).res.status).to.equal(410);
    });

    it('withdraws a link not used yet once the user changes their password themselves', async () => {
      const viewer = await signIn(h, t, 'viewer');
      const { id } = await userByEmail(viewer.email);
      const link = shownLink((await admin.post(`/users/${id}/reset`)).text);
      clock.advance(1000);
      await viewer.post('/account/password', { current_password: PASSWORD, password: 'my own new password', confirmation: 'my own new password' });
      expect((await viewer.get('/account')).text).to.include('Password changed');
      // Whoever holds the link cannot set the password again and take the account.
      const { form } = await accept(h, link, 'taken over');
      expect(form.status).to.equal(410);
      expect(form.text).to.include('This link is not valid');
      expect(await signInStatus(h, viewer.email, 'my own new password')).to.equal(303);
      expect(await h.db('password_links').where({ user_id: id }).whereNull('used_at')).to.deep.equal([]);
    });

    it('withdraws the earlier link when a new one is made', async () => {
      const viewer = await signIn(h, t, 'viewer');
      const { id } = await userByEmail(viewer.email);
      const first = shownLink((await admin.post(`/users/${id}/reset`)).text);
      const second = shownLink((await admin.post(`/users/${id}/reset`)).text);
      expect((await accept(h, first, 'first password')).form.status).to.equal(410);
      expect((await accept(h, second, 'second password')).res.status).to.equal(303);
    });
  });

  describe('admins only', () => {
    it('refuses a viewer the page and every action, with a valid CSRF token, changing nothing', async () => {
      const viewer = await signIn(h, t, 'viewer');
      const target = await signIn(h, t, 'viewer');
      const { id } = await userByEmail(target.email);
      const snapshot = async () => ({
        users: await h.db('users').orderBy('id'),
        links: await h.db('password_links').orderBy('id'),
        audit: await h.db('audit_events').count({ n: '*' }).first(),
      });
      const before = await snapshot();
      const page = await viewer.get('/users');
      expect(page.status).to.equal(403);
      expect(page.text).to.include('Only admins can change this.');
      expect((await viewer.get('/')).text).not.to.include('href="/users"');
      for (const [path, form] of [
        ['/users', { email: 'sneaky@example.com', role: 'admin' }],
        [`/users/${id}/role`, { role: 'admin' }],
        [`/users/${id}/disable`, {}],
        [`/users/${id}/enable`, {}],
        [`/users/${id}/delete`, {}],
        [`/users/${id}/reset`, {}],
      ] as const) {
        const res = await viewer.post(path, form);
        expect(res.status, path).to.equal(403);
        expect(res.text, path).to.include('Only admins can change this.');
      }
      expect(await snapshot()).to.deep.equal(before);
    });

    it("answers 404 for another organization's user", async () => {
      const other = await h.tenant({ slug: 'other' });
      const stranger = await h.services.users.create({ organizationId: other.organizationId, email: 'stranger@example.com', password: PASSWORD, role: 'admin' });
      for (const action of ['disable', 'delete', 'reset']) expect((await admin.post(`/users/${stranger.id}/${action}`)).status, action).to.equal(404);
      expect((await admin.get('/users')).text).not.to.include('stranger@example.com');
      expect((await h.db('users').where({ id: stranger.id }).first()).disabled_at).to.equal(null);
    });
  });

  describe('disabling and deleting', () => {
    it('signs a disabled user out at their next request, and lets them in again once enabled', async () => {
      const viewer = await signIn(h, t, 'viewer');
      const { id } = await userByEmail(viewer.email);
      expect((await viewer.get('/scribes')).status).to.equal(200);
      const res = await admin.post(`/users/${id}/disable`);
      expect(res.status).to.equal(303);
      const next = await viewer.get('/scribes');
      expect(next.status).to.equal(303);
      expect(next.headers.location).to.equal('/login?next=%2Fscribes');
      expect(await signInStatus(h, viewer.email, PASSWORD)).to.equal(401);
      expect((await admin.get('/users')).text).to.include('>disabled<');
      await admin.post(`/users/${id}/enable`);
      expect(await signInStatus(h, viewer.email, PASSWORD)).to.equal(303);
      const actions = (await h.db('audit_events').where({ subject_id: id }).orderBy('id')).map((e) => [e.action, e.detail]);
      expect(actions).to.deep.equal([
        ['user.disable', viewer.email],
        ['user.enable', viewer.email],
      ]);
      // The history link of the Users page: the log filtered to this user.
      const history = await admin.get(`/audit?subject_type=user&subject_id=${id}`);
      expect(history.text).to.include('<option value="user" selected>user</option>');
      expect(history.text.match(/<span class="hint">user<\/span>\s+<span title="[^"]+">/g)).to.have.length(2);
    });

    it('keeps a disabled user signed out once enabled again, though they made no request meanwhile', async () => {
      const viewer = await signIn(h, t, 'viewer');
      const { id } = await userByEmail(viewer.email);
      expect((await viewer.get('/scribes')).status).to.equal(200);
      clock.advance(1000);
      expect((await admin.post(`/users/${id}/disable`)).status).to.equal(303);
      clock.advance(1000);
      expect((await admin.post(`/users/${id}/enable`)).status).to.equal(303);
      const next = await viewer.get('/scribes');
      expect([next.status, next.headers.location]).to.deep.equal([303, '/login?next=%2Fscribes']);
      // A new sign-in is a session of its own.
      expect(await signInStatus(h, viewer.email, PASSWORD)).to.equal(303);
    });

    it('signs a deleted user out at their next request', async () => {
      const viewer = await signIn(h, t, 'viewer');
      const { id } = await userByEmail(viewer.email);
      expect((await admin.post(`/users/${id}/delete`)).status).to.equal(303);
      expect(await userByEmail(viewer.email)).to.equal(undefined);
      expect((await viewer.get('/scribes')).status).to.equal(303);
    });

    it('signs a disabled user out when another app instance on the same database serves them', async () => {
      const db = openDatabase(h.config.databaseUrl, { poolSize: h.config.databasePoolSize });
      const services = createServices({ config: h.config, db, logger: createLogger('silent'), options: { runOnNewWork: false, dispatchOnAccept: false } });
      const other = createApp({ config: h.config, logger: createLogger('silent'), services, sessionSecret: 'test-session-secret-of-some-length' });
      try {
        await h.services.users.create({ organizationId: t.organizationId, email: 'elsewhere@example.com', password: PASSWORD });
        const agent = supertest.agent(other);
        const token = csrfTokenOf((await agent.get('/login')).text);
        expect((await agent.post('/login').type('form').send({ _csrf: token, email: 'elsewhere@example.com', password: PASSWORD })).status).to.equal(303);
        expect((await agent.get('/scribes')).status).to.equal(200);
        const { id } = await userByEmail('elsewhere@example.com');
        await admin.post(`/users/${id}/disable`);
        const next = await agent.get('/scribes');
        expect(next.status).to.equal(303);
        expect(next.headers.location).to.equal('/login?next=%2Fscribes');
      } finally {
        await services.stop();
        await db.destroy();
      }
    });
  });

  describe('the last active admin', () => {
    it(`cannot be demoted, disabled or deleted: "${LAST_ADMIN}"`, async () => {
      const lone = await h.tenant({ slug: 'lone' });
      const only = await signIn(h, lone, 'admin');
      const viewer = await signIn(h, lone, 'viewer');
      // Another admin who never set a password, and a disabled one, are not active admins.
      await h.services.users.invite(operatorActor(lone.organizationId), { email: 'pending.admin@example.com', role: 'admin' });
      const disabled = await h.services.users.create({ organizationId: lone.organizationId, email: 'off.admin@example.com', password: PASSWORD, role: 'admin' });
      await h.services.users.setDisabled(operatorActor(lone.organizationId), disabled.id, true);
      const { id } = await userByEmail(only.email);
      const before = await userByEmail(only.email);
      for (const [path, form] of [
        [`/users/${id}/role`, { role: 'viewer' }],
        [`/users/${id}/disable`, {}],
        [`/users/${id}/delete`, {}],
      ] as const) {
        const res = await only.post(path, form);
        expect(res.status, path).to.equal(303);
        expect(res.headers.location).to.equal('/users');
        expect((await only.get('/users')).text, path).to.include(LAST_ADMIN);
      }
      expect(await userByEmail(only.email)).to.deep.equal(before);
      // With a second active admin, the first may step down.
      const { id: viewerId } = await userByEmail(viewer.email);
      await only.post(`/users/${viewerId}/role`, { role: 'admin' });
      expect((await h.db('users').where({ id: viewerId }).first()).role).to.equal('admin');
      await only.post(`/users/${id}/role`, { role: 'viewer' });
      expect((await userByEmail(only.email)).role).to.equal('viewer');
    });
  });

  describe('two admins stepping down at once', () => {
    it('lets exactly one of them, so the organization keeps an active admin', async () => {
      const pair = await h.tenant({ slug: 'pair' });
      const actor = operatorActor(pair.organizationId);
      const ids: string[] = [];
      for (const email of ['one@pair.example', 'two@pair.example'])
        ids.push((await h.services.users.create({ organizationId: pair.organizationId, email, password: PASSWORD, role: 'admin' })).id);
      const outcomes = await Promise.allSettled([h.services.users.setRole(actor, ids[0]!, 'viewer'), h.services.users.setDisabled(actor, ids[1]!, true)]);
      expect(outcomes.map((o) => o.status).sort()).to.deep.equal(['fulfilled', 'rejected']);
      expect((outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult).reason.message).to.equal(LAST_ADMIN);
      const admins = await h.db('users').where({ organization_id: pair.organizationId, role: 'admin' }).whereNull('disabled_at');
      expect(admins).to.have.length(1);
    });
  });

  describe('/account', () => {
    it("changes the password only with the current one, saying what is wrong, and signs the user's other sessions out", async () => {
      const viewer = await signIn(h, t, 'viewer');
      const cases = [
        [{ current_password: 'not my password', password: 'new password 1', confirmation: 'new password 1' }, 'Current password is wrong'],
        [{ current_password: PASSWORD, password: 'short', confirmation: 'short' }, 'Password must be at least 8 characters'],
        [{ current_password: PASSWORD, password: 'new password 1', confirmation: 'new password 2' }, 'The two new passwords do not match'],
      ] as const;
      for (const [form, message] of cases) {
        const res = await viewer.post('/account/password', form);
        expect(res.status).to.equal(303);
        expect(res.headers.location).to.equal('/account');
        const page = await viewer.get('/account');
        expect(page.text, message).to.include(`<p class="flash flash-error" role="alert">${message}</p>`);
      }
      expect(await signInStatus(h, viewer.email, PASSWORD)).to.equal(303);
      const elsewhere = supertest.agent(h.app);
      const login = csrfTokenOf((await elsewhere.get('/login')).text);
      await elsewhere.post('/login').type('form').send({ _csrf: login, email: viewer.email, password: PASSWORD });
      expect((await elsewhere.get('/scribes')).status).to.equal(200);
      clock.advance(1000);
      await viewer.post('/account/password', { current_password: PASSWORD, password: 'new password 1', confirmation: 'new password 1' });
      expect((await viewer.get('/account')).text).to.include('Password changed');
      // The user's other session ends; this one stays.
      expect((await elsewhere.get('/scribes')).status).to.equal(303);
      expect((await viewer.get('/scribes')).status).to.equal(200);
      expect(await signInStatus(h, viewer.email, PASSWORD)).to.equal(401);
      expect(await signInStatus(h, viewer.email, 'new password 1')).to.equal(303);
      const audit = JSON.stringify(await h.db('audit_events').where({ action: 'user.password' }));
      expect(audit).to.include(viewer.email).and.not.include('new password 1').and.not.include(PASSWORD);
    });

    it('stops guessing the current password after 10 tries in 15 minutes', async () => {
      const viewer = await signIn(h, t, 'viewer');
      for (let i = 0; i < 10; i++) await viewer.post('/account/password', { current_password: `guess ${i}`, password: 'new password 1', confirmation: 'new password 1' });
      const res = await viewer.post('/account/password', { current_password: PASSWORD, password: 'new password 1', confirmation: 'new password 1' });
      expect(res.status).to.equal(303);
      expect((await viewer.get('/account')).text).to.include('Too many password changes. Wait a few minutes and try again.');
      expect(await signInStatus(h, viewer.email, PASSWORD)).to.equal(303);
    });
  });
});
