import { expect } from 'chai';
import supertest from 'supertest';
import { createHarness, testClock, type Harness, type Tenant } from '../helpers/harness.js';
import { PASSWORD, csrfTokenOf } from '../helpers/console.js';
import { messages } from '../../src/console/routes/account.js';

describe('console: time zones', () => {
  const clock = testClock('2026-11-24T12:00:00.000Z');
  let h: Harness;
  let t: Tenant;
  before(async () => {
    h = await createHarness({ options: { clock, dispatchOnAccept: false, runOnNewWork: false } });
    t = await h.tenant();
    clock.set('2026-11-20T14:30:00.000Z');
    await h.services.requests.submit(t.scribe, { task: { summary: 'Four days old' } });
    clock.set('2026-11-24T12:00:00.000Z');
  });
  after(() => h.close());

  let users = 0;
  const newUser = async (role: 'admin' | 'viewer' = 'admin') => {
    const email = `zone-${++users}@example.com`;
    const { id } = await h.services.users.create({ organizationId: t.organizationId, email, password: PASSWORD, role });
    return { id, email };
  };
  /** Signs in through the form as a browser would, its script having filled in `time_zone`. */
  const signInWith = async (email: string, timeZone?: string) => {
    const agent = supertest.agent(h.app);
    const form = (await agent.get('/login')).text;
    expect(form).to.include('<input type="hidden" name="time_zone" value="">');
    expect(form).to.include('<script src="/assets/login.js" defer></script>');
    const res = await agent
      .post('/login')
      .type('form')
      .send({ _csrf: csrfTokenOf(form), email, password: PASSWORD, ...(timeZone === undefined ? {} : { time_zone: timeZone }) });
    expect(res.status).to.equal(303);
    return agent;
  };
  const zoneOf = async (id: string) => (await h.db('users').where({ id }).first('time_zone')).time_zone;
  const receiptTime = async (agent: ReturnType<typeof supertest.agent>) =>
    /<td><time datetime="2026-11-20T14:30:00.000Z" title="([^"]+)">([^<]+)<\/time><\/td>/.exec((await agent.get('/receipts')).text)?.slice(1);

  it('keeps the zone the browser reports at the first sign-in, and writes times in it', async () => {
    const user = await newUser();
    const agent = await signInWith(user.email, 'America/New_York');
    expect(await zoneOf(user.id)).to.equal('America/New_York');
    expect(await receiptTime(agent)).to.deep.equal(['2026-11-20 14:30:00 UTC', '20 Nov 2026, 09:30']);
    // Recent times stay relative, in any zone.
    clock.set('2026-11-20T14:33:00.000Z');
    expect(await receiptTime(agent)).to.deep.equal(['2026-11-20 14:30:00 UTC', '3 minutes ago']);
    clock.set('2026-11-24T12:00:00.000Z');
  });

  it('does not change the zone at a later sign-in from another zone', async () => {
    const user = await newUser();
    await signInWith(user.email, 'Asia/Tokyo');
    const again = await signInWith(user.email, 'Europe/Zurich');
    expect(await zoneOf(user.id)).to.equal('Asia/Tokyo');
    expect(await receiptTime(again)).to.deep.equal(['2026-11-20 14:30:00 UTC', '20 Nov 2026, 23:30']);
  });

  it('signs in but keeps no zone when the browser reports none or one that names no zone, and then writes times in UTC', async () => {
    const user = await newUser();
    for (const zone of [undefined, '', 'Mars/Olympus_Mons', '+02:00', 'Europe/Zurich<script>']) {
      const agent = await signInWith(user.email, zone);
      expect(await zoneOf(user.id), String(zone)).to.equal(null);
      expect(await receiptTime(agent)).to.deep.equal(['2026-11-20 14:30:00 UTC', '20 Nov 2026, 14:30']);
    }
    // Reported later, it is kept then.
    await signInWith(user.email, 'Europe/Zurich');
    expect(await zoneOf(user.id)).to.equal('Europe/Zurich');
  });

  it('writes times in UTC for a stored zone that no longer names one', async () => {
    const user = await newUser();
    const agent = await signInWith(user.email);
    await h.db('users').where({ id: user.id }).update({ time_zone: 'Atlantis/Capital' });
    expect(await receiptTime(agent)).to.deep.equal(['2026-11-20 14:30:00 UTC', '20 Nov 2026, 14:30']);
    const account = (await agent.get('/account')).text;
    expect(account).to.include('<dd id="current-zone">not set: times are shown in UTC</dd>');
    expect(account).to.include('<option value="UTC" selected>UTC</option>');
    expect(account).not.to.include('Atlantis');
  });

  it('shows the account page, linked from the email in the header, and changes the zone there, audited', async () => {
    const user = await newUser('viewer');
    const agent = await signInWith(user.email, 'America/New_York');
    const dashboard = (await agent.get('/')).text;
    expect(dashboard).to.include(`<span class="who"><a href="/account">${user.email}</a> · viewer</span>`);
    const page = await agent.get('/account');
    expect(page.status).to.equal(200);
    expect(page.text).to.include('<h1>Your account</h1>');
    expect(page.text).to.include('<dd id="current-zone">America/New_York</dd>');
    expect(page.text).to.include('<option value="America/New_York" selected>America/New_York</option>');
    expect(page.text).to.include('<option value="UTC">UTC</option>');
    expect(page.text).to.include('<option value="Europe/Zurich">Europe/Zurich</option>');

    const saved = await agent
      .post('/account/time-zone')
      .type('form')
      .send({ _csrf: csrfTokenOf(page.text), time_zone: 'Europe/Zurich' });
    expect(saved.status).to.equal(303);
    expect(saved.headers.location).to.equal('/account');
    expect(await zoneOf(user.id)).to.equal('Europe/Zurich');
    const after = (await agent.get('/account')).text;
    expect(after).to.include('<p class="flash flash-notice" role="status">Times are now shown in Europe/Zurich.</p>');
    expect(await receiptTime(agent)).to.deep.equal(['2026-11-20 14:30:00 UTC', '20 Nov 2026, 15:30']);
    const events = await h
      .db('audit_events')
      .where({ organization_id: t.organizationId, action: 'user.time_zone' })
      .select('actor_type', 'actor_id', 'actor_label', 'subject_type', 'subject_id', 'detail');
    expect(events).to.deep.equal([{ actor_type: 'user', actor_id: user.id, actor_label: user.email, subject_type: 'user', subject_id: user.id, detail: 'Europe/Zurich' }]);
    // Back to UTC, which the runtime's list leaves out but the page offers.
    await agent
      .post('/account/time-zone')
      .type('form')
      .send({ _csrf: csrfTokenOf(after), time_zone: 'UTC' });
    expect(await zoneOf(user.id)).to.equal('UTC');
  });

  it('refuses a zone that names none with a clear message, changing nothing', async () => {
    const user = await newUser();
    const agent = await signInWith(user.email, 'Asia/Tokyo');
    const audited = async () => (await h.db('audit_events').where({ actor_id: user.id, action: 'user.time_zone' }).count({ n: '*' }).first())!.n;
    for (const zone of ['Mars/Olympus_Mons', '', 'UTC+2']) {
      const page = (await agent.get('/account')).text;
      const res = await agent
        .post('/account/time-zone')
        .type('form')
        .send({ _csrf: csrfTokenOf(page), time_zone: zone });
      expect(res.status).to.equal(303);
      expect((await agent.get('/account')).text).to.include(`<p class="flash flash-error" role="alert">${messages.invalidTimeZone}</p>`);
      expect(await zoneOf(user.id)).to.equal('Asia/Tokyo');
    }
    expect(messages.invalidTimeZone).to.equal('Time zone must be an IANA time zone, such as Europe/Zurich or UTC');
    expect(Number(await audited())).to.equal(0);
  });
});
