import { expect } from 'chai';
import { createHarness, testClock, type Harness, type Tenant } from '../helpers/harness.js';
import { signIn, type ConsoleClient } from '../helpers/console.js';

describe('console: schedules', () => {
  const clock = testClock('2026-11-23T08:59:30.000Z');
  let h: Harness;
  let t: Tenant;
  let admin: ConsoleClient;
  let viewer: ConsoleClient;
  before(async () => {
    h = await createHarness({ options: { clock, dispatchOnAccept: false, runOnNewWork: false } });
    t = await h.tenant();
    admin = await signIn(h, t, 'admin');
    viewer = await signIn(h, t, 'viewer');
  });
  after(() => h.close());

  const form = { cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', overlap: 'skip', title: 'Morning brief', summary: 'Summarize yesterday', acceptance_criteria: '' };
  const newSchedule = async () => {
    const res = await admin.post(`/b/${t.scribe.slug}/schedules`, form);
    expect(res.status).to.equal(303);
    return res.headers.location!.split('/').pop()!;
  };

  it('previews an expression in words with its next five fire times in the zone, saving nothing', async () => {
    const res = await admin.post(`/b/${t.scribe.slug}/schedules`, { ...form, preview: '1' });
    expect(res.status).to.equal(200);
    expect(res.text).to.include('At 09:00, Monday through Friday');
    const fires = [...res.text.matchAll(/<li>([^<]+CET)<\/li>/g)].map((m) => m[1]);
    expect(fires).to.deep.equal([
      'Tue, 24 Nov 2026, 09:00:00 CET',
      'Wed, 25 Nov 2026, 09:00:00 CET',
      'Thu, 26 Nov 2026, 09:00:00 CET',
      'Fri, 27 Nov 2026, 09:00:00 CET',
      'Mon, 30 Nov 2026, 09:00:00 CET',
    ]);
    expect(await h.db('schedules').first()).to.equal(undefined);
  });

  for (const [change, message] of [
    [{ cron: '0 9 * *' }, 'Cron expression must have 5 fields, or 6 with seconds first'],
    [{ timezone: 'Europe/Atlantis' }, 'Unknown time zone: Europe/Atlantis (use an IANA name such as Europe/Berlin)'],
    [{ cron: 'H * * * *' }, 'Cron expression is not supported: Expression contains invalid values: &#39;H&#39;'],
    [{ summary: '' }, 'Summary is required'],
  ] as const) {
    it(`refuses ${JSON.stringify(change)} with 422 "${message}", keeping what was typed`, async () => {
      const res = await admin.post(`/b/${t.scribe.slug}/schedules`, { ...form, ...change });
      expect(res.status).to.equal(422);
      expect(res.text).to.include(`<p class="flash flash-error" role="alert">${message}</p>`);
      expect(res.text).to.include('value="Morning brief"');
      expect(await h.db('schedules').first()).to.equal(undefined);
    });
  }

  it('creates a schedule and shows it with its words, next fire times, template and fires', async () => {
    const id = await newSchedule();
    const page = await admin.get(`/schedules/${id}`);
    expect(page.status).to.equal(200);
    expect(page.text).to.include('At 09:00, Monday through Friday').and.include('Europe/Berlin').and.include('Tue, 24 Nov 2026, 09:00:00 CET');
    expect(page.text).to.include('Summarize yesterday').and.include('No fires yet.');
    expect((await admin.get('/schedules')).text)
      .to.include(`/schedules/${id}`)
      .and.include('Morning brief');
    expect((await admin.get(`/b/${t.scribe.slug}/settings`)).text).to.include(`/schedules/${id}`);

    clock.set('2026-11-24T08:00:00.500Z');
    await h.services.schedules.tick();
    const receipt = (await h.db('requests').where({ origin_id: id }).first())!;
    const after = await admin.get(`/schedules/${id}`);
    expect(after.text).to.include(`href="/receipts/${receipt.id}"`).and.include('submitted');
    expect((await admin.get(`/receipts/${receipt.id}`)).text).to.include(`Submitted by <a href="/schedules/${id}">a schedule</a>`);
  });

  it('lists a skipped fire with its reason', async () => {
    const id = await newSchedule();
    await h.services.scribes.setState(t.organizationId, t.scribe.slug, 'powered_off');
    clock.set('2026-11-25T08:00:00.000Z');
    await h.services.schedules.tick();
    await h.services.scribes.setState(t.organizationId, t.scribe.slug, 'active');
    const page = await admin.get(`/schedules/${id}`);
    expect(page.text).to.include('skipped').and.include('Scribe is not active');
  });

  it('pauses, resumes, runs now, edits and deletes, each audited under the signed-in user', async () => {
    const id = await newSchedule();
    expect((await admin.post(`/schedules/${id}/pause`)).headers.location).to.equal(`/schedules/${id}`);
    expect((await admin.get(`/schedules/${id}`)).text)
      .to.include('None while paused.')
      .and.include('Resume');
    await admin.post(`/schedules/${id}/resume`);
    const run = await admin.post(`/schedules/${id}/run`);
    expect(run.status).to.equal(303);
    const shown = await admin.get(`/schedules/${id}`);
    expect(shown.text)
      .to.match(/Submitted receipt req_[0-9A-Z]{26}\./)
      .and.include(`run now by ${admin.email}`);
    const { last_fire_at } = await h.db('schedules').where({ id }).first('last_fire_at');
    expect(last_fire_at).to.be.a('string');
    expect(shown.text).to.include(`<dt>Last fire</dt><dd><time datetime="${last_fire_at}"`);
    expect((await admin.get('/schedules')).text).to.include(`<time datetime="${last_fire_at}"`);

    const edit = await admin.get(`/schedules/${id}/edit`);
    expect(edit.text).to.include('value="0 9 * * 1-5"').and.include('Save schedule');
    const saved = await admin.post(`/schedules/${id}/edit`, { ...form, cron: '*/30 * * * *', timezone: 'UTC' });
    expect(saved.status).to.equal(303);
    expect((await admin.get(`/schedules/${id}`)).text).to.include('Every 30 minutes');
    const refused = await admin.post(`/schedules/${id}/edit`, { ...form, cron: 'every day' });
    expect(refused.status).to.equal(422);
    expect((await h.db('schedules').where({ id }).first()).cron).to.equal('*/30 * * * *');

    const deleted = await admin.post(`/schedules/${id}/delete`);
    expect(deleted.headers.location).to.equal('/schedules');
    expect((await admin.get(`/schedules/${id}`)).status).to.equal(404);
    const audit = await h.db('audit_events').where({ subject_type: 'schedule', subject_id: id }).orderBy('id').select('actor_type', 'actor_label', 'action');
    expect(audit.filter((a) => a.actor_type === 'user').map((a) => [a.action, a.actor_label])).to.deep.equal(
      ['schedule.create', 'schedule.pause', 'schedule.resume', 'schedule.run_now', 'schedule.update', 'schedule.delete'].map((action) => [action, admin.email]),
    );
  });

  it('shows a stored expression that cannot be computed as "invalid expression" on every page, never 500', async () => {
    const hashed = await newSchedule();
    const impossible = await newSchedule();
    // Written before these checks, or straight into the database.
    await h.db('schedules').where({ id: hashed }).update({ cron: 'H * * * *' });
    await h.db('schedules').where({ id: impossible }).update({ cron: '0 0 31 2 *', paused: true, next_run_at: null });
    for (const path of ['/schedules', `/b/${t.scribe.slug}/settings`]) {
      const page = await admin.get(path);
      expect(page.status, path).to.equal(200);
      expect(page.text.match(/invalid expression/g), path).to.have.length(2);
    }
    const page = await admin.get(`/schedules/${hashed}`);
    expect(page.status).to.equal(200);
    expect(page.text).to.include('<dt>In words</dt><dd>invalid expression</dd>');
    expect(page.text).to.include('None: Cron expression is not supported: Expression contains invalid values: &#39;H&#39;. It does not fire until its expression is edited.');
    const paused = await admin.get(`/schedules/${impossible}`);
    expect(paused.status).to.equal(200);
    expect(paused.text).to.include('None: Invalid cron expression: Invalid explicit day of month definition.');

    const resumed = await admin.post(`/schedules/${impossible}/resume`);
    expect(resumed.headers.location).to.equal(`/schedules/${impossible}`);
    expect((await admin.get(`/schedules/${impossible}`)).text).to.include('Invalid cron expression: Invalid explicit day of month definition</p>');
    expect(await h.db('schedules').where({ id: impossible }).first()).to.include({ next_run_at: null });
    expect((await admin.get(`/schedules/${hashed}/edit`)).status).to.equal(200);
  });

  it('shows viewers the schedules but no forms, and refuses their changes with 403', async () => {
    const id = await newSchedule();
    const page = await viewer.get(`/schedules/${id}`);
    expect(page.status).to.equal(200);
    expect(page.text).to.not.include(`action="/schedules/${id}/pause"`).and.not.include('/edit"');
    expect((await viewer.get(`/b/${t.scribe.slug}/settings`)).text).to.not.include('New schedule');
    for (const path of [`/schedules/${id}/pause`, `/schedules/${id}/run`, `/schedules/${id}/delete`, `/b/${t.scribe.slug}/schedules`]) {
      expect((await viewer.post(path, form)).status, path).to.equal(403);
    }
    expect((await viewer.get(`/b/${t.scribe.slug}/schedules/new`)).status).to.equal(403);
    expect((await h.db('schedules').where({ id }).first()).paused).to.not.be.ok;
  });

  it("answers 404 for another organization's schedule", async () => {
    const id = await newSchedule();
    const other = await h.tenant({ slug: 'other' });
    const stranger = await signIn(h, other, 'admin');
    expect((await stranger.get(`/schedules/${id}`)).status).to.equal(404);
    expect((await stranger.post(`/schedules/${id}/delete`)).status).to.equal(404);
    expect(await h.db('schedules').where({ id }).first()).to.not.equal(undefined);
  });
});
