import { expect } from 'chai';
import { exactTime, localTime, RELATIVE_WITHIN_MS } from '../../src/console/view-helpers.js';
import { canonicalTimeZone, timeZoneChoices, zoneOrUtc } from '../../src/lib/time-zones.js';

const NOW = Date.parse('2026-11-24T12:00:00.000Z');

describe('localTime()', () => {
  it('writes a time within twelve hours of now relative to it, in any zone', () => {
    expect(localTime('2026-11-24T11:57:00.000Z', 'America/New_York', NOW)).to.equal('3 minutes ago');
    expect(localTime('2026-11-24T11:59:58.000Z', 'UTC', NOW)).to.equal('just now');
    expect(localTime('2026-11-24T14:00:00.000Z', 'Europe/Zurich', NOW)).to.equal('in 2 hours');
    expect(localTime(new Date(NOW - RELATIVE_WITHIN_MS + 1).toISOString(), 'UTC', NOW)).to.equal('11 hours ago');
  });

  it('writes an older time as its date and time in the zone', () => {
    const at = '2026-11-20T14:30:00.000Z';
    expect(localTime(at, 'UTC', NOW)).to.equal('20 Nov 2026, 14:30');
    expect(localTime(at, 'America/New_York', NOW)).to.equal('20 Nov 2026, 09:30');
    expect(localTime(at, 'Asia/Kolkata', NOW)).to.equal('20 Nov 2026, 20:00');
    // Twelve hours ago exactly is no longer recent.
    expect(localTime(new Date(NOW - RELATIVE_WITHIN_MS).toISOString(), 'UTC', NOW)).to.equal('24 Nov 2026, 00:00');
  });

  it('follows daylight saving time: the same UTC hour reads an hour apart in summer and winter', () => {
    expect(localTime('2026-07-01T12:00:00.000Z', 'Europe/Zurich', NOW)).to.equal('1 Jul 2026, 14:00');
    expect(localTime('2026-01-15T12:00:00.000Z', 'Europe/Zurich', NOW)).to.equal('15 Jan 2026, 13:00');
    expect(localTime('2026-07-01T12:00:00.000Z', 'America/New_York', NOW)).to.equal('1 Jul 2026, 08:00');
    expect(localTime('2026-01-15T12:00:00.000Z', 'America/New_York', NOW)).to.equal('15 Jan 2026, 07:00');
    // The night New York moves its clocks back (1 Nov 2026): 05:30 and 06:30 UTC both read 01:30.
    expect(localTime('2026-11-01T05:30:00.000Z', 'America/New_York', NOW)).to.equal('1 Nov 2026, 01:30');
    expect(localTime('2026-11-01T06:30:00.000Z', 'America/New_York', NOW)).to.equal('1 Nov 2026, 01:30');
  });

  it('reads a stored zone that names none, or no zone, as UTC', () => {
    const at = '2026-11-20T14:30:00.000Z';
    expect(localTime(at, 'Mars/Olympus_Mons', NOW)).to.equal('20 Nov 2026, 14:30');
    expect(localTime(at, '+05:00', NOW)).to.equal('20 Nov 2026, 14:30');
    expect(localTime(at, null, NOW)).to.equal('20 Nov 2026, 14:30');
    expect(localTime(null, 'UTC', NOW)).to.equal('—');
  });

  it("writes the dashboard's times relative to now: a worker's last tick, the oldest waiting work", () => {
    // The dashboard hands over lastTickAt.toISOString() and min(updated_at), with the page's `now` in ms.
    expect(localTime(new Date(NOW - 2000).toISOString(), 'Europe/Zurich', NOW)).to.equal('just now');
    expect(localTime('2026-11-24T11:57:00.000Z', 'Europe/Zurich', NOW)).to.equal('3 minutes ago');
    // A `now` given as an ISO string (as the dashboard once did) reads the same, not as a date.
    expect(localTime('2026-11-24T11:57:00.000Z', 'Europe/Zurich', new Date(NOW).toISOString())).to.equal('3 minutes ago');
    expect(localTime(null, 'UTC', NOW)).to.equal('—');
  });

  it('keeps the exact UTC time for the title', () => {
    expect(exactTime('2026-11-20T14:30:05.000Z')).to.equal('2026-11-20 14:30:05 UTC');
  });
});

describe('time zones', () => {
  it('takes IANA names (as the runtime lists them, or aliases as given) and UTC, in any case', () => {
    expect(canonicalTimeZone('Europe/Zurich')).to.equal('Europe/Zurich');
    expect(canonicalTimeZone('America/Argentina/Buenos_Aires')).to.equal('America/Argentina/Buenos_Aires');
    expect(canonicalTimeZone('europe/zurich')).to.equal('Europe/Zurich');
    expect(canonicalTimeZone('Asia/Calcutta')).to.equal('Asia/Calcutta');
    expect(canonicalTimeZone('utc')).to.equal('UTC');
  });

  it('refuses what names no zone', () => {
    for (const value of ['Mars/Olympus_Mons', '', '+01:00', 'Europe/Zurich; drop table users', 'x'.repeat(65), 42, null, undefined]) {
      expect(canonicalTimeZone(value), String(value)).to.equal(undefined);
    }
  });

  it('offers UTC first, then every zone the runtime knows, each once', () => {
    const zones = timeZoneChoices();
    expect(zones[0]).to.equal('UTC');
    expect(zones).to.include('Europe/Zurich').and.include('America/New_York');
    expect(new Set(zones).size).to.equal(zones.length);
  });

  it('falls back to UTC for a stored zone that no longer names one', () => {
    expect(zoneOrUtc('Europe/Zurich')).to.equal('Europe/Zurich');
    expect(zoneOrUtc('Nowhere/Atall')).to.equal('UTC');
    expect(zoneOrUtc(null)).to.equal('UTC');
  });
});
