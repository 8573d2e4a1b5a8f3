import { expect } from 'chai';
import { createHarness, staffOf, testClock, type Harness, type Tenant } from '../helpers/harness.js';
import { createServices } from '../../src/services.js';
import { createLogger } from '../../src/logger.js';
import type { ScheduleRow } from '../../src/schedules/queries.js';

describe('schedules', () => {
  const clock = testClock('2026-11-23T08:59:30.000Z');
  let h: Harness;
  let t: Tenant;
  before(async () => {
    h = await createHarness({ options: { clock, dispatchOnAccept: false, runOnNewWork: false } });
    t = await h.tenant();
  });
  after(() => h.close());
  beforeEach(() => clock.set('2026-11-23T08:59:30.000Z'));
  // Each test fires only its own schedules.
  afterEach(() => h.db('schedules').delete());

  const staff = () => staffOf(t);
  const create = (input: Partial<Parameters<Harness['services']['schedules']['create']>[2]> = {}) =>
    h.services.schedules.create(staff(), t.scribe.slug, { cron: '0 * * * *', summary: 'Write the hourly report', ...input });
  const fires = (id: string) => h.db('schedule_fires').where({ schedule_id: id }).orderBy('fire_at').select('fire_at', 'outcome', 'reason', 'request_id', 'missed_since');
  const receiptsOf = (id: string) =>
    h.db('requests').where({ origin_type: 'schedule', origin_id: id }).orderBy('id').select('id', 'status', 'title', 'summary', 'acceptance_criteria');
  const stored = async (id: string) => (await h.db<ScheduleRow>('schedules').where({ id }).first())!;
  /** Completes the task of the schedule's receipts, so overlap `skip` lets the next fire through. */
  const finishTasks = async () => {
    await h.services.dispatcher.tick();
    await h.db('tasks').where({ scribe_id: t.scribe.id }).update({ status: 'done' });
  };

  describe('create', () => {
    it('stores the schedule with its next fire time, in UTC unless a zone is given, and audits it', async () => {
      const schedule = await create({ cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', title: 'Morning brief' });
      expect(schedule.next_run_at).to.equal('2026-11-24T08:00:00.000Z'); // Tuesday 09:00 CET; Monday's has passed
      expect(schedule).to.include({ timezone: 'Europe/Berlin', overlap: 'skip', paused: false, title: 'Morning brief' });
      const event = await h.db('audit_events').where({ subject_type: 'schedule', subject_id: schedule.id }).first();
      expect(event).to.include({ action: 'schedule.create', actor_type: 'user', detail: '0 9 * * 1-5 (Europe/Berlin)' });
      expect((await create()).timezone).to.equal('UTC');
    });

    for (const [input, message] of [
      [{ cron: '0 9 * *' }, 'Cron expression must have 5 fields, or 6 with seconds first'],
      // A valid expression, longer than the column holds.
      [
        {
          cron: `${Array.from({ length: 60 }, (_, i) => i).join(',')} ${Array.from({ length: 24 }, (_, i) => i).join(',')} ${Array.from({ length: 31 }, (_, i) => i + 1).join(',')} * *`,
        },
        'Cron expression must be at most 200 characters',
      ],
      [{ cron: '0 25 * * *' }, 'Invalid cron expression: Constraint error, got value 25 expected range 0-23'],
      [{ cron: 'H * * * *' }, "Cron expression is not supported: Expression contains invalid values: 'H'"],
      [{ timezone: 'Europe/Nowhere' }, 'Unknown time zone: Europe/Nowhere (use an IANA name such as Europe/Berlin)'],
      [{ overlap: 'queue' }, 'Overlap must be one of skip, allow'],
      [{ summary: '   ' }, 'Summary is required'],
      [{ title: 'x'.repeat(201) }, 'title must be at most 200 characters'],
      [{ summary: 'a\0b' }, 'summary must not contain U+0000'],
    ] as const) {
      it(`refuses ${JSON.stringify(input).slice(0, 40)} with 422 "${message}" and stores nothing`, async () => {
        const before = await h.db('schedules').count({ n: '*' }).first();
        const err = await create(input).catch((e: Error & { status: number }) => e);
        expect(err).to.include({ status: 422, message });
        expect(await h.db('schedules').count({ n: '*' }).first()).to.deep.equal(before);
      });
    }

    it('answers 404 "Scribe not found" for a scribe of another organization', async () => {
      const other = await h.tenant({ slug: 'elsewhere' });
      const err = await h.services.schedules.create(staffOf(other), t.scribe.slug, { cron: '* * * * *', summary: 'x' }).catch((e: Error & { status: number }) => e);
      expect(err).to.include({ status: 404, message: 'Scribe not found' });
    });
  });

  describe('firing', () => {
    it('submits its task at the fire time through the submit path, once, marked as from the schedule', async () => {
      const schedule = await create({ title: 'Hourly report', acceptance_criteria: 'Numbers match' });
      expect(await h.services.schedules.tick()).to.deep.equal({ submitted: 0, skipped: 0 });
      clock.set('2026-11-23T09:00:00.200Z');
      expect(await h.services.schedules.tick()).to.deep.equal({ submitted: 1, skipped: 0 });
      expect(await h.services.schedules.tick()).to.deep.equal({ submitted: 0, skipped: 0 });

      const [receipt] = await receiptsOf(schedule.id);
      expect(receipt).to.include({ status: 'accepted', title: 'Hourly report', summary: 'Write the hourly report', acceptance_criteria: 'Numbers match' });
      expect(await fires(schedule.id)).to.deep.equal([{ fire_at: '2026-11-23T09:00:00.000Z', outcome: 'submitted', reason: null, request_id: receipt.id, missed_since: null }]);
      expect(await stored(schedule.id)).to.include({ next_run_at: '2026-11-23T10:00:00.000Z', last_fire_at: '2026-11-23T09:00:00.000Z', claim_token: null });
      // Listed by the API like any other receipt, and audited as the schedule's doing.
      const listed = await h.api.get(`/api/v1/scribes/${t.scribe.slug}/requests`).set(t.headers);
      expect(listed.body.requests.map((r: { id: string }) => r.id)).to.include(receipt.id);
      const audit = await h.db('audit_events').where({ actor_type: 'schedule', actor_id: schedule.id }).orderBy('id').select('action', 'subject_type', 'subject_id', 'actor_label');
      expect(audit).to.deep.equal([
        { action: 'request.submit', subject_type: 'request', subject_id: receipt.id, actor_label: 'schedule: Hourly report' },
        { action: 'schedule.fire', subject_type: 'schedule', subject_id: schedule.id, actor_label: 'schedule: Hourly report' },
      ]);
      // The dispatcher makes its task like any other's.
      await h.services.dispatcher.tick();
      expect(await h.db('tasks').where({ request_id: receipt.id }).select('title')).to.deep.equal([{ title: 'Hourly report' }]);
    });

    it("skips a fire while the previous fire's task is still open (overlap skip), and fires again once it is done", async () => {
      const schedule = await create();
      clock.set('2026-11-23T09:00:01.000Z');
      await h.services.schedules.tick();
      clock.set('2026-11-23T10:00:01.000Z');
      expect(await h.services.schedules.tick()).to.deep.equal({ submitted: 0, skipped: 1 });
      await h.services.dispatcher.tick();
      clock.set('2026-11-23T11:00:01.000Z');
      expect(await h.services.schedules.tick()).to.deep.equal({ submitted: 0, skipped: 1 });
      await finishTasks();
      clock.set('2026-11-23T12:00:01.000Z');
      expect(await h.services.schedules.tick()).to.deep.equal({ submitted: 1, skipped: 0 });
      expect((await fires(schedule.id)).map((f) => [f.fire_at.slice(11, 16), f.outcome, f.reason])).to.deep.equal([
        ['09:00', 'submitted', null],
        ['10:00', 'skipped', "Previous fire's receipt is still accepted"],
        ['11:00', 'skipped', "Previous fire's task is still open"],
        ['12:00', 'submitted', null],
      ]);
      expect(await receiptsOf(schedule.id)).to.have.length(2);
    });

    it('fires anyway with overlap allow', async () => {
      const schedule = await create({ overlap: 'allow' });
      for (const at of ['09:00:01', '10:00:01', '11:00:01']) {
        clock.set(`2026-11-23T${at}.000Z`);
        await h.services.schedules.tick();
      }
      expect(await receiptsOf(schedule.id)).to.have.length(3);
    });

    it('catches up fire times missed while no process ran with one fire, not a burst', async () => {
      const schedule = await create();
      clock.set('2026-11-23T14:20:00.000Z'); // down from before 09:00 until 14:20
      expect(await h.services.schedules.tick()).to.deep.equal({ submitted: 1, skipped: 0 });
      expect(await fires(schedule.id)).to.deep.equal([
        { fire_at: '2026-11-23T14:00:00.000Z', outcome: 'submitted', reason: null, request_id: (await receiptsOf(schedule.id))[0]!.id, missed_since: '2026-11-23T09:00:00.000Z' },
      ]);
      expect((await stored(schedule.id)).next_run_at).to.equal('2026-11-23T15:00:00.000Z');
    });

    for (const [zone, created, due, nextDay] of [
      // 02:00 CET → 03:00 CEST on 29 March; 02:00 EST → 03:00 EDT on 8 March.
      ['Europe/Berlin', '2026-03-28T12:00:00.000Z', '2026-03-29T01:30:00.000Z', '2026-03-30T00:30:00.000Z'],
      ['America/New_York', '2026-03-07T12:00:00.000Z', '2026-03-08T07:30:00.000Z', '2026-03-09T06:30:00.000Z'],
    ] as const) {
      it(`fires a daily 02:30 on the spring-forward day in ${zone}, when 02:30 does not exist, at 03:30; and catches it up after downtime`, async () => {
        clock.set(created);
        const onTime = await create({ cron: '30 2 * * *', timezone: zone });
        expect(onTime.next_run_at).to.equal(due);
        clock.set(new Date(Date.parse(due) + 500).toISOString());
        expect(await h.services.schedules.tick()).to.deep.equal({ submitted: 1, skipped: 0 });
        expect((await fires(onTime.id)).map((f) => [f.fire_at, f.missed_since])).to.deep.equal([[due, null]]);
        expect((await stored(onTime.id)).next_run_at).to.equal(nextDay);

        // Down from the day before's fire until after the change: the change's fire is the one caught up.
        clock.set(new Date(Date.parse(due) - 86_400_000 - 60_000).toISOString());
        const late = await create({ cron: '30 2 * * *', timezone: zone });
        clock.set(new Date(Date.parse(due) + 3 * 3_600_000).toISOString());
        await h.services.schedules.tick();
        expect((await fires(late.id)).map((f) => [f.fire_at, f.missed_since])).to.deep.equal([[due, late.next_run_at]]);
      });
    }

    it('records a fire for a scribe that is not active as skipped, with no receipt', async () => {
      const other = await h.services.scribes.create({ organizationId: t.organizationId, slug: 'resting', name: 'Resting' });
      const schedule = await h.services.schedules.create(staff(), 'resting', { cron: '0 * * * *', summary: 'x' });
      await h.services.scribes.setState(t.organizationId, 'resting', 'powered_off');
      clock.set('2026-11-23T09:00:00.000Z');
      expect(await h.services.schedules.tick()).to.deep.equal({ submitted: 0, skipped: 1 });
      expect(await fires(schedule.id)).to.deep.equal([
        { fire_at: '2026-11-23T09:00:00.000Z', outcome: 'skipped', reason: 'Scribe is not active', request_id: null, missed_since: null },
      ]);
      expect(await h.db('requests').where({ scribe_id: other.id }).first()).to.equal(undefined);
      const audit = await h.db('audit_events').where({ actor_type: 'schedule', actor_id: schedule.id }).select('action', 'detail');
      expect(audit).to.deep.equal([{ action: 'schedule.fire', detail: 'skipped: Scribe is not active' }]);
    });

    it('does not submit a fire time twice: a fire already recorded (by a process whose claim lapsed) creates nothing', async () => {
      const schedule = await create();
      clock.set('2026-11-23T09:00:00.000Z');
      // Another process fired 09:00 and died before moving the schedule on.
      await h.db('schedule_fires').insert({
        id: '01935f00-0000-7000-8000-0000000000f1',
        schedule_id: schedule.id,
        fire_at: '2026-11-23T09:00:00.000Z',
        fired_at: '2026-11-23T09:00:00.000Z',
        outcome: 'skipped',
        reason: 'test',
        manual: false,
      });
      expect(await h.services.schedules.tick()).to.deep.equal({ submitted: 0, skipped: 0 });
      expect(await receiptsOf(schedule.id)).to.deep.equal([]);
      expect((await stored(schedule.id)).next_run_at).to.equal('2026-11-23T10:00:00.000Z');
    });

    it('does not fire a stored expression that cannot be computed, leaves it without a next fire time, and fires the others', async () => {
      const good = await create({ overlap: 'allow' });
      const hashed = await create();
      const impossible = await create();
      // Written before these checks, or straight into the database.
      await h.db('schedules').where({ id: hashed.id }).update({ cron: 'H * * * *' });
      await h.db('schedules').where({ id: impossible.id }).update({ cron: '0 0 31 2 *' });
      clock.set('2026-11-23T09:00:00.500Z');
      expect(await h.services.schedules.tick()).to.deep.equal({ submitted: 1, skipped: 0 });
      expect(await receiptsOf(good.id)).to.have.length(1);
      for (const bad of [hashed, impossible]) {
        expect(await fires(bad.id)).to.deep.equal([]);
        expect(await stored(bad.id)).to.include({ next_run_at: null, claim_token: null, lease_until: null });
      }
      clock.set('2026-11-23T10:00:00.500Z');
      expect(await h.services.schedules.tick()).to.deep.equal({ submitted: 1, skipped: 0 });

      // Resuming cannot give it a next fire time; editing its expression does.
      const err = await h.services.schedules.resume(staff(), hashed.id).catch((e: Error & { status: number }) => e);
      expect(err).to.include({ status: 422, message: "Cron expression is not supported: Expression contains invalid values: 'H'" });
      expect(h.services.schedules.describe(await stored(hashed.id))).to.equal('invalid expression');
      const edited = await h.services.schedules.update(staff(), hashed.id, { cron: '30 * * * *', summary: 'Write the hourly report' });
      expect(edited.next_run_at).to.equal('2026-11-23T10:30:00.000Z');
    });

    it('gives each fire time to one of several services ticking at once on the database', async () => {
      const peers = Array.from({ length: 3 }, () =>
        createServices({ config: h.config, db: h.db, logger: createLogger('silent'), options: { clock, dispatchOnAccept: false, runOnNewWork: false } }),
      );
      const schedule = await create({ cron: '*/10 * * * * *', overlap: 'allow' });
      for (let second = 0; second < 60; second += 10) {
        clock.set(`2026-11-23T09:00:${String(second).padStart(2, '0')}.000Z`);
        await Promise.all(peers.flatMap((peer) => [peer.schedules.tick(), peer.schedules.tick()]));
      }
      const perFire = await h.db('schedule_fires').where({ schedule_id: schedule.id }).groupBy('fire_at').select('fire_at', h.db.raw('count(*) as n'));
      expect(perFire.map((f) => [f.fire_at.slice(17, 19), Number(f.n)])).to.deep.equal([
        ['00', 1],
        ['10', 1],
        ['20', 1],
        ['30', 1],
        ['40', 1],
        ['50', 1],
      ]);
      expect(await receiptsOf(schedule.id)).to.have.length(6);
      for (const peer of peers) await peer.stop();
    });
  });

  describe('pause, resume, run now, edit and delete', () => {
    it('pauses (no fires, no next fire time) and resumes from now without catching up', async () => {
      const schedule = await create();
      expect(await h.services.schedules.pause(staff(), schedule.id)).to.include({ paused: true, next_run_at: null });
      clock.set('2026-11-23T12:30:00.000Z');
      expect(await h.services.schedules.tick()).to.deep.equal({ submitted: 0, skipped: 0 });
      expect(await h.services.schedules.resume(staff(), schedule.id)).to.include({ paused: false, next_run_at: '2026-11-23T13:00:00.000Z' });
      expect(await h.services.schedules.tick()).to.deep.equal({ submitted: 0, skipped: 0 });
      const actions = await h.db('audit_events').where({ subject_type: 'schedule', subject_id: schedule.id }).orderBy('id').pluck('action');
      expect(actions).to.deep.equal(['schedule.create', 'schedule.pause', 'schedule.resume']);
    });

    it('runs now, even while paused and while the previous task is open, as a manual fire', async () => {
      const schedule = await create();
      await h.services.schedules.pause(staff(), schedule.id);
      const first = await h.services.schedules.runNow(staff(), schedule.id);
      clock.advance(1000);
      const second = await h.services.schedules.runNow(staff(), schedule.id);
      expect(first.request_id).to.match(/^req_/);
      expect(second.request_id).to.match(/^req_/).and.not.equal(first.request_id);
      const rows = await h.db('schedule_fires').where({ schedule_id: schedule.id }).orderBy('fire_at').select('manual', 'outcome', 'run_by_type', 'run_by', 'fire_at');
      expect(rows.map((r) => [Boolean(r.manual), r.outcome, r.run_by_type, r.run_by])).to.deep.equal([
        [true, 'submitted', 'user', staff().label],
        [true, 'submitted', 'user', staff().label],
      ]);
      // Each run now is the schedule's last fire.
      expect((await stored(schedule.id)).last_fire_at).to.equal(rows[1].fire_at);
    });

    it("keeps a run now as the last fire when the clock's later claim fires an earlier fire time", async () => {
      const schedule = await create();
      clock.set('2026-11-23T10:00:30.000Z');
      const { fire_at } = await h.services.schedules.runNow(staff(), schedule.id);
      await h.services.schedules.tick();
      const fired = await h.db('schedule_fires').where({ schedule_id: schedule.id, manual: false }).first('fire_at', 'run_by');
      expect(fired).to.deep.equal({ fire_at: '2026-11-23T10:00:00.000Z', run_by: null });
      expect((await stored(schedule.id)).last_fire_at).to.equal(fire_at);
    });

    it('refuses to run now for a scribe that is not active (422 "Scribe is not active"), recording the refusal', async () => {
      await h.services.scribes.create({ organizationId: t.organizationId, slug: 'off-duty', name: 'Off duty', state: 'powered_off' });
      const schedule = await h.services.schedules.create(staff(), 'off-duty', { cron: '0 * * * *', summary: 'x' });
      const err = await h.services.schedules.runNow(staff(), schedule.id).catch((e: Error & { status: number }) => e);
      expect(err).to.include({ status: 422, message: 'Scribe is not active' });
      expect((await fires(schedule.id)).map((f) => f.reason)).to.deep.equal(['Scribe is not active']);
    });

    it('edits the expression and template; the next fire time follows the new expression', async () => {
      const schedule = await create();
      const edited = await h.services.schedules.update(staff(), schedule.id, { cron: '30 9 * * *', timezone: 'Asia/Tokyo', overlap: 'allow', summary: 'New text' });
      expect(edited).to.include({ cron: '30 9 * * *', timezone: 'Asia/Tokyo', overlap: 'allow', summary: 'New text', next_run_at: '2026-11-24T00:30:00.000Z' });
      expect(await stored(schedule.id)).to.include({ summary: 'New text', next_run_at: '2026-11-24T00:30:00.000Z' });
      const err = await h.services.schedules.update(staff(), schedule.id, { cron: 'nope', summary: 'x' }).catch((e: Error) => e);
      expect(err).to.have.property('message', 'Cron expression must have 5 fields, or 6 with seconds first');
      expect((await stored(schedule.id)).cron).to.equal('30 9 * * *');
    });

    it('deletes the schedule and its fires; its receipts and audit events stay', async () => {
      const schedule = await create();
      const { request_id } = await h.services.schedules.runNow(staff(), schedule.id);
      await h.services.schedules.remove(staff(), schedule.id);
      expect(await h.db('schedules').where({ id: schedule.id }).first()).to.equal(undefined);
      expect(await h.db('schedule_fires').where({ schedule_id: schedule.id }).first()).to.equal(undefined);
      expect(await h.db('requests').where({ id: request_id }).first()).to.include({ origin_type: 'schedule', origin_id: schedule.id });
      const actions = await h.db('audit_events').where({ subject_type: 'schedule', subject_id: schedule.id }).orderBy('id').pluck('action');
      expect(actions).to.deep.equal(['schedule.create', 'schedule.run_now', 'schedule.fire', 'schedule.delete']);
    });

    it('answers 404 "Schedule not found" for another organization\'s schedule and for a malformed id', async () => {
      const schedule = await create();
      const other = await h.tenant({ slug: 'outsider' });
      for (const [actor, id] of [
        [staffOf(other), schedule.id],
        [staff(), 'not-an-id'],
      ] as const) {
        const err = await h.services.schedules.pause(actor, id).catch((e: Error & { status: number }) => e);
        expect(err).to.include({ status: 404, message: 'Schedule not found' });
      }
      expect((await stored(schedule.id)).paused).to.not.equal(true);
    });
  });
});
