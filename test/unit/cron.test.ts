import { expect } from 'chai';
import { checkCron, describeCron, describeStored, latestFireAtOrBefore, nextFireAfter, nextFires } from '../../src/schedules/cron.js';

const iso = (dates: Date[]) => dates.map((d) => d.toISOString());

describe('schedule cron expressions', () => {
  describe('stepping in Europe/Berlin across daylight-saving changes', () => {
    it('fires a daily 02:30 once on the spring-forward day, at 03:30 local (02:30 does not exist)', () => {
      const fires = nextFires({ cron: '30 2 * * *', timezone: 'Europe/Berlin' }, new Date('2026-03-27T12:00:00Z'), 4);
      // 28 March CET (UTC+1); 29 March the clocks jump 02:00 → 03:00; 30 March CEST (UTC+2).
      expect(iso(fires)).to.deep.equal(['2026-03-28T01:30:00.000Z', '2026-03-29T01:30:00.000Z', '2026-03-30T00:30:00.000Z', '2026-03-31T00:30:00.000Z']);
    });

    it('fires a daily 02:30 once on the fall-back day, though 02:30 happens twice', () => {
      const fires = nextFires({ cron: '30 2 * * *', timezone: 'Europe/Berlin' }, new Date('2026-10-24T12:00:00Z'), 3);
      expect(iso(fires)).to.deep.equal(['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z', '2026-10-27T01:30:00.000Z']);
    });

    it('fires an hourly schedule every real hour through the fall-back night (25 fires that day)', () => {
      const from = new Date('2026-10-24T21:59:59Z'); // 23:59:59 CEST on the 24th
      const fires = nextFires({ cron: '0 * * * *', timezone: 'Europe/Berlin' }, from, 26);
      const onThe25th = fires.filter((d) => d < new Date('2026-10-25T23:00:00Z'));
      expect(onThe25th).to.have.length(25);
      for (let i = 1; i < fires.length; i++) expect(fires[i]!.getTime() - fires[i - 1]!.getTime()).to.equal(3_600_000);
    });

    it('keeps 09:00 local on weekdays on both sides of a change (New York)', () => {
      const fires = nextFires({ cron: '0 9 * * 1-5', timezone: 'America/New_York' }, new Date('2026-10-30T00:00:00Z'), 3);
      // Friday 30 Oct EDT (UTC-4); the clocks go back on Sunday 1 Nov; Monday 2 Nov EST (UTC-5).
      expect(iso(fires)).to.deep.equal(['2026-10-30T13:00:00.000Z', '2026-11-02T14:00:00.000Z', '2026-11-03T14:00:00.000Z']);
    });
  });

  it('takes six fields with seconds first', () => {
    expect(nextFireAfter({ cron: '*/20 * * * * *', timezone: 'UTC' }, new Date('2026-01-01T00:00:00.500Z')).toISOString()).to.equal('2026-01-01T00:00:20.000Z');
  });

  it('finds the latest fire time at or before a moment, counting the moment itself', () => {
    const hourly = { cron: '0 * * * *', timezone: 'UTC' };
    expect(latestFireAtOrBefore(hourly, new Date('2026-01-01T12:00:00.000Z')).toISOString()).to.equal('2026-01-01T12:00:00.000Z');
    expect(latestFireAtOrBefore(hourly, new Date('2026-01-01T12:59:59.999Z')).toISOString()).to.equal('2026-01-01T12:00:00.000Z');
  });

  it('finds a fire that a daylight-saving change moved as the latest, as stepping forward makes it (stepping back skips it)', () => {
    const daily = { cron: '30 2 * * *', timezone: 'Europe/Berlin' };
    // 02:30 does not exist on 29 March: that day's fire is at 03:30 CEST, 01:30 UTC.
    expect(latestFireAtOrBefore(daily, new Date('2026-03-29T01:30:00.250Z')).toISOString()).to.equal('2026-03-29T01:30:00.000Z');
    expect(latestFireAtOrBefore(daily, new Date('2026-03-29T23:00:00.000Z')).toISOString()).to.equal('2026-03-29T01:30:00.000Z');
    expect(latestFireAtOrBefore(daily, new Date('2026-03-29T01:29:59.999Z')).toISOString()).to.equal('2026-03-28T01:30:00.000Z');
  });

  it('steps forward from the due time where stepping back fails (Australia/Lord_Howe, half an hour forward on 4 October)', () => {
    const hourly = { cron: '0 * * * *', timezone: 'Australia/Lord_Howe' };
    // 01:00 LHST is 14:30 UTC; the next, 03:00 LHDT, is 16:00 UTC. Between them cron-parser's prev() throws.
    const due = nextFireAfter(hourly, new Date('2026-10-03T14:00:00.000Z'));
    expect(due.toISOString()).to.equal('2026-10-03T14:30:00.000Z');
    expect(latestFireAtOrBefore(hourly, new Date('2026-10-03T15:45:00.500Z'), due).toISOString()).to.equal('2026-10-03T14:30:00.000Z');
  });

  it('normalizes spacing and the zone name', () => {
    expect(checkCron({ cron: '  0   9 * * 1-5 ', timezone: 'utc' })).to.deep.equal({ cron: '0 9 * * 1-5', timezone: 'UTC' });
  });

  for (const [cron, message] of [
    ['* * *', 'Cron expression must have 5 fields, or 6 with seconds first'],
    ['', 'Cron expression must have 5 fields, or 6 with seconds first'],
    ['@daily', 'Cron expression must have 5 fields, or 6 with seconds first'],
    ['* * * * * * *', 'Cron expression must have 5 fields, or 6 with seconds first'],
    ['61 * * * *', 'Invalid cron expression: Constraint error, got value 61 expected range 0-59'],
    ['0 0 31 2 *', 'Invalid cron expression: Invalid explicit day of month definition'],
    // What cron-parser steps but cronstrue cannot put into words.
    ['H * * * *', "Cron expression is not supported: Expression contains invalid values: 'H'"],
    ['0 H(0-3) * * *', "Cron expression is not supported: Expression contains invalid values: 'H(,)'"],
    ['H H * * * *', "Cron expression is not supported: Expression contains invalid values: 'H'"],
    ['0 0 ? ? *', "Cron expression is not supported: Expression contains invalid values: '?'"],
    // What cronstrue puts into words but cron-parser cannot step.
    ['0 0 15W * *', 'Invalid cron expression: Invalid characters, got value: 15W'],
    ['0 0 LW * *', 'Invalid cron expression: Invalid characters, got value: LW'],
    ['0 0 L-2 * *', 'Invalid cron expression: Constraint error, got range NaN-2 expected range 1-31'],
    ['0 0 * * L', 'Invalid cron expression: CronDayOfWeek Validation error, unexpected standalone L'],
    ['0 0 * * 1#1,2#2', 'Invalid cron expression: Constraint error, invalid dayOfWeek `#` and `,` special char'],
  ]) {
    it(`refuses ${JSON.stringify(cron)} with 422 "${message}"`, () => {
      expect(() => checkCron({ cron: cron!, timezone: 'UTC' }))
        .to.throw(message!)
        .with.property('status', 422);
    });
  }

  for (const zone of ['Mars/Olympus_Mons', '../etc/passwd', 'Europe/Berlinn']) {
    it(`refuses the zone ${zone}`, () => {
      expect(() => checkCron({ cron: '0 9 * * *', timezone: zone }))
        .to.throw(`Unknown time zone: ${zone} (use an IANA name such as Europe/Berlin)`)
        .with.property('status', 422);
    });
  }

  it('takes L, # and ? where both stepping and words handle them', () => {
    for (const [cron, words, next] of [
      ['0 0 L * *', 'At 00:00, on the last day of the month', '2026-01-31T00:00:00.000Z'],
      ['0 0 * * 5L', 'At 00:00, on the last Friday of the month', '2026-01-30T00:00:00.000Z'],
      ['0 0 * * 1#2', 'At 00:00, on the second Monday of the month', '2026-01-12T00:00:00.000Z'],
      ['0 12 ? * MON', 'At 12:00, only on Monday', '2026-01-05T12:00:00.000Z'],
    ]) {
      expect(checkCron({ cron: cron!, timezone: 'UTC' }).cron).to.equal(cron);
      expect(describeCron(cron!), cron).to.equal(words);
      expect(nextFireAfter({ cron: cron!, timezone: 'UTC' }, new Date('2026-01-01T00:00:00.000Z')).toISOString(), cron).to.equal(next);
    }
  });

  it('describes a stored expression that cannot be computed or put into words as "invalid expression", never throwing', () => {
    expect(describeStored({ cron: '0 9 * * 1-5', timezone: 'Europe/Berlin' })).to.equal('At 09:00, Monday through Friday');
    for (const schedule of [
      { cron: 'H * * * *', timezone: 'UTC' },
      { cron: '0 0 31 2 *', timezone: 'UTC' },
      { cron: '0 9 * * *', timezone: 'Mars/Base' },
      { cron: '', timezone: 'UTC' },
    ]) {
      expect(describeStored(schedule), schedule.cron).to.equal('invalid expression');
    }
  });

  it('says the expression in words', () => {
    expect(describeCron('0 9 * * 1-5')).to.equal('At 09:00, Monday through Friday');
    expect(describeCron('*/20 * * * * *')).to.equal('Every 20 seconds');
  });
});
