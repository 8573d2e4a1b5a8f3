import { expect } from 'chai';
import { cliInstall } from '../helpers/cli.js';
import { openInstall } from '../helpers/databases.js';

describe('the admin CLI: schedules', function () {
  this.timeout(90_000);
  const cli = cliInstall({ scribe: 'atlas' });
  const { admin, json, dir } = cli;

  it('creates, edits, pauses, resumes, runs now, shows, lists and deletes a schedule, each audited as the operator', async () => {
    const created = await json(
      'schedule',
      'create',
      '--org',
      cli.orgId,
      '--scribe',
      'atlas',
      '--cron',
      '0 9 * * 1-5',
      '--summary',
      'Morning brief',
      '--timezone',
      'Europe/Berlin',
      '--title',
      'Brief',
    );
    expect(Object.keys(created)).to.deep.equal(['id', 'next_run_at']);
    expect(new Date(created.next_run_at).toISOString()).to.equal(created.next_run_at);
    const id = created.id as string;

    // A blank zone (a script's unset "$TZ") is refused, and the schedule keeps its own.
    const blank = await admin('schedule', 'edit', '--id', id, '--timezone', '');
    expect(blank).to.include({ code: 1, stdout: '', stderr: 'error: --timezone is blank: give an IANA name such as Europe/Berlin, or leave it out\n' });
    expect(await json('schedule', 'show', '--id', id)).to.include({ timezone: 'Europe/Berlin', next_run_at: created.next_run_at });

    const edited = await json('schedule', 'edit', '--id', id, '--cron', '*/15 * * * *', '--overlap', 'allow');
    expect(Object.keys(edited)).to.deep.equal(['id', 'next_run_at']);
    expect(new Date(edited.next_run_at).getUTCMinutes() % 15).to.equal(0);

    expect(await json('schedule', 'pause', '--id', id)).to.deep.equal({ id, paused: true, next_run_at: null });
    const resumed = await json('schedule', 'resume', '--id', id);
    expect(resumed).to.include({ id, paused: false });
    expect(resumed.next_run_at).to.be.a('string');

    const ran = await json('schedule', 'run-now', '--id', id);
    expect(Object.keys(ran)).to.deep.equal(['id', 'request_id']);
    expect(ran.request_id).to.match(/^req_[0-9A-Z]{26}$/);

    const shown = await json('schedule', 'show', '--id', id);
    expect(shown).to.include({
      id,
      scribe: 'atlas',
      cron: '*/15 * * * *',
      timezone: 'Europe/Berlin',
      overlap: 'allow',
      summary: 'Morning brief',
      title: 'Brief',
      paused: false,
      description: 'Every 15 minutes',
    });
    expect(shown.fires).to.have.length(1);
    expect(shown.fires[0]).to.include({ outcome: 'submitted', request_id: ran.request_id, manual: true, run_by: 'admin CLI' });
    expect(shown.last_fire_at).to.equal(shown.fires[0].fire_at);

    const listed = await json('schedule', 'list', '--org', cli.orgId, '--scribe', 'atlas');
    expect(listed.schedules.map((s: { id: string }) => s.id)).to.deep.equal([id]);

    expect(await json('schedule', 'delete', '--id', id)).to.deep.equal({ id, deleted: true });
    const db = await openInstall(dir);
    try {
      const audit = await db('audit_events').where({ subject_type: 'schedule', subject_id: id }).orderBy('id').select('actor_type', 'action');
      expect(audit.map((a) => a.action)).to.deep.equal([
        'schedule.create',
        'schedule.update',
        'schedule.pause',
        'schedule.resume',
        'schedule.run_now',
        'schedule.fire',
        'schedule.delete',
      ]);
      expect(audit.filter((a) => a.actor_type !== 'operator').map((a) => a.action)).to.deep.equal(['schedule.fire']);
      expect(await db('requests').where({ id: ran.request_id }).first()).to.include({ origin_type: 'schedule', origin_id: id });
    } finally {
      await db.destroy();
    }
  });

  it('refuses a bad expression, zone or id with a message on stderr and a non-zero exit, creating nothing', async () => {
    for (const [args, message] of [
      [['--cron', '* * *'], 'error: Cron expression must have 5 fields, or 6 with seconds first\n'],
      [['--cron', '0 9 * * *', '--timezone', 'Nowhere/Land'], 'error: Unknown time zone: Nowhere/Land (use an IANA name such as Europe/Berlin)\n'],
      [['--cron', 'H * * * *'], "error: Cron expression is not supported: Expression contains invalid values: 'H'\n"],
      // Given but blank: the documented refusals (exit 1), not a missing flag (exit 2).
      [['--cron', ''], 'error: Cron expression must have 5 fields, or 6 with seconds first\n'],
      [['--cron', '0 9 * * *', '--summary', '  '], 'error: Summary is required\n'],
      [['--cron', '0 9 * * *', '--timezone', ''], 'error: --timezone is blank: give an IANA name such as Europe/Berlin, or leave it out\n'],
    ] as const) {
      const result = await admin('schedule', 'create', '--org', cli.orgId, '--scribe', 'atlas', '--summary', 'x', ...args);
      expect(result, args.join(' ')).to.include({ code: 1, stdout: '', stderr: message });
    }
    const missing = await admin('schedule', 'pause', '--id', '01935f00-0000-7000-8000-000000000000');
    expect(missing).to.include({ code: 1, stderr: 'error: Schedule not found\n' });
    const noCron = await admin('schedule', 'create', '--org', cli.orgId, '--scribe', 'atlas', '--summary', 'x');
    expect(noCron.code).to.equal(2);
    expect(noCron.stderr).to.match(/^error: --cron is required\nusage: schedule create --org ORG_ID --scribe SLUG --cron EXPR/);
    const db = await openInstall(dir);
    try {
      expect(await db('schedules').first()).to.equal(undefined);
    } finally {
      await db.destroy();
    }
  });

  it('shows a stored expression that cannot be computed as "invalid expression", and refuses to resume it', async () => {
    const { id } = await json('schedule', 'create', '--org', cli.orgId, '--scribe', 'atlas', '--cron', '0 9 * * *', '--summary', 'Morning brief');
    await json('schedule', 'pause', '--id', id);
    const db = await openInstall(dir);
    try {
      // Written before these checks, or straight into the database.
      await db('schedules').where({ id }).update({ cron: 'H * * * *' });
    } finally {
      await db.destroy();
    }
    expect(await json('schedule', 'show', '--id', id)).to.include({ id, cron: 'H * * * *', description: 'invalid expression' });
    const resumed = await admin('schedule', 'resume', '--id', id);
    expect(resumed).to.include({ code: 1, stdout: '', stderr: "error: Cron expression is not supported: Expression contains invalid values: 'H'\n" });
    await json('schedule', 'delete', '--id', id);
  });
});
