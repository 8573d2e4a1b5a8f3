import { expect } from 'chai';
import { barChart, bucketRanges, formatDuration, formatNumber, niceScale, quantile, timeWindow, utcClock, zoneClock, type ChartInput } from '../../src/console/charts.js';

const MIN = 60_000;
const at = (iso: string) => Date.parse(iso);

describe('timeWindow()', () => {
  it('ends with the bucket holding now, aligned on the clock', () => {
    const w = timeWindow(at('2026-11-21T09:02:30.000Z'), 180 * MIN, 5 * MIN);
    expect(new Date(w.start).toISOString()).to.equal('2026-11-21T06:05:00.000Z');
    expect(w.buckets).to.equal(36);
  });
  it('starts a new bucket exactly on its boundary', () => {
    const w = timeWindow(at('2026-11-21T09:05:00.000Z'), 60 * MIN, 5 * MIN);
    expect(new Date(w.start).toISOString()).to.equal('2026-11-21T08:10:00.000Z');
  });
  it('refuses a span that is not a whole number of buckets', () => {
    expect(() => timeWindow(0, 7 * MIN, 5 * MIN)).to.throw('The span must be a whole number of buckets');
  });
});

describe('bucketRanges()', () => {
  it('gives each bucket as the stored timestamps it holds, the start inclusive, the end not', () => {
    const w = timeWindow(at('2026-11-21T09:02:00.000Z'), 15 * MIN, 5 * MIN);
    expect(bucketRanges(w)).to.deep.equal([
      { from: '2026-11-21T08:50:00.000Z', to: '2026-11-21T08:55:00.000Z' },
      { from: '2026-11-21T08:55:00.000Z', to: '2026-11-21T09:00:00.000Z' },
      { from: '2026-11-21T09:00:00.000Z', to: '2026-11-21T09:05:00.000Z' },
    ]);
  });
});

describe('quantile()', () => {
  it('takes the nearest rank', () => {
    const values = Array.from({ length: 20 }, (_, i) => i + 1);
    expect(quantile(values, 0.5)).to.equal(10);
    expect(quantile(values, 0.95)).to.equal(19);
    expect(quantile(values, 1)).to.equal(20);
    expect(quantile([7], 0.95)).to.equal(7);
  });
  it('answers null for no values', () => {
    expect(quantile([], 0.5)).to.equal(null);
  });
});

describe('niceScale()', () => {
  it('steps by 1, 2 or 5 times a power of ten up to a tick at or above the maximum', () => {
    expect(niceScale(7.3)).to.deep.equal({ max: 8, ticks: [0, 2, 4, 6, 8] });
    expect(niceScale(4)).to.deep.equal({ max: 4, ticks: [0, 1, 2, 3, 4] });
    expect(niceScale(0.6)).to.deep.equal({ max: 0.6, ticks: [0, 0.2, 0.4, 0.6] });
    expect(niceScale(2300)).to.deep.equal({ max: 3000, ticks: [0, 1000, 2000, 3000] });
  });
  it('keeps to at most the ticks asked for', () => {
    for (const max of [0.01, 0.3, 1, 9.99, 11, 101, 4321, 99999]) expect(niceScale(max, 4).ticks.length, String(max)).to.be.at.most(5);
  });
  it('answers 0..1 for nothing to show', () => {
    expect(niceScale(0)).to.deep.equal({ max: 1, ticks: [0, 1] });
  });
});

describe('formatNumber() and formatDuration()', () => {
  it('shows up to two decimals, none when whole', () => {
    expect([formatNumber(0.2), formatNumber(3), formatNumber(1 / 3)]).to.deep.equal(['0.2', '3', '0.33']);
  });
  it('says milliseconds, seconds or minutes', () => {
    expect([formatDuration(850), formatDuration(1500), formatDuration(60_000), formatDuration(150_000)]).to.deep.equal(['850 ms', '1.5 s', '1 min', '2.5 min']);
  });
});

describe('utcClock and zoneClock()', () => {
  it('reads times in UTC', () => {
    expect(utcClock.time(at('2026-11-21T09:05:30.000Z'))).to.equal('09:05');
    expect(utcClock.dateTime(at('2026-11-21T09:05:30.000Z'))).to.equal('2026-11-21 09:05');
    expect(zoneClock('UTC')).to.equal(utcClock);
  });

  it("reads times in the reader's zone, across a date line and daylight saving time", () => {
    const ny = zoneClock('America/New_York');
    expect(ny.zone).to.equal('America/New_York');
    expect(ny.time(at('2026-11-21T03:05:00.000Z'))).to.equal('22:05');
    expect(ny.dateTime(at('2026-11-21T03:05:00.000Z'))).to.equal('2026-11-20 22:05');
    expect(ny.dateTime(at('2026-07-01T12:00:00.000Z'))).to.equal('2026-07-01 08:00');
    expect(zoneClock('Asia/Kolkata').time(at('2026-11-21T00:00:00.000Z'))).to.equal('05:30');
  });
});

describe('barChart()', () => {
  const input = (values: ChartInput['values'], mode: ChartInput['mode'] = 'stacked'): ChartInput => ({
    id: 'c',
    title: 'T',
    description: 'D',
    unit: 'things',
    window: timeWindow(at('2026-11-21T09:59:00.000Z'), 4 * 60 * MIN, 60 * MIN),
    clock: utcClock,
    series: [
      { key: 'a', label: 'A' },
      { key: 'b', label: 'B' },
    ],
    mode,
    values,
    format: formatNumber,
    empty: 'Nothing.',
  });

  it('stacks segments on each other, heights in proportion to the scale', () => {
    const chart = barChart(
      input([
        [1, 3],
        [0, 0],
        [2, null],
        [0, 1],
      ]),
    );
    // Plot from y 28 to 196 (168 high); the largest bar, 4, is the scale's top.
    expect(chart.yTicks.map((t) => t.label)).to.deep.equal(['0', '1', '2', '3', '4']);
    const [first, empty, third] = chart.bars;
    expect(first!.segments.map((s) => [s.key, s.y, s.height])).to.deep.equal([
      ['a', 154, 42],
      ['b', 28, 126],
    ]);
    expect(empty!.segments).to.deep.equal([]);
    expect(third!.segments.map((s) => [s.key, s.y, s.height])).to.deep.equal([['a', 112, 84]]);
    expect(first!.segments[1]!.tip).to.equal('2026-11-21 06:00 UTC: B 3 things');
  });

  it('starts overlaid segments at zero, the later drawn over the earlier', () => {
    const chart = barChart(input([[4, 2]], 'overlaid'));
    expect(chart.bars[0]!.segments.map((s) => [s.key, s.y, s.height])).to.deep.equal([
      ['a', 28, 168],
      ['b', 112, 84],
    ]);
  });

  it('spreads the bars over the plot with a gap, and labels round times', () => {
    const chart = barChart(
      input([
        [1, 0],
        [1, 0],
        [1, 0],
        [1, 0],
      ]),
    );
    // From x 64, 564 wide in 4 slots of 141: bars of 112.8, starting 14.1 into their slot.
    expect(chart.bars.map((b) => [b.x, b.width])).to.deep.equal([
      [78.1, 112.8],
      [219.1, 112.8],
      [360.1, 112.8],
      [501.1, 112.8],
    ]);
    expect(chart.xTicks.map((t) => t.label)).to.deep.equal(['06:00', '07:00', '08:00', '09:00', '10:00']);
    expect(chart.xLabel).to.equal('Time (UTC)');
  });

  it('labels every sixth of the buckets at most', () => {
    const chart = barChart({ ...input([]), window: timeWindow(at('2026-11-21T09:02:00.000Z'), 180 * MIN, 5 * MIN), values: Array.from({ length: 36 }, () => [1, 0]) });
    expect(chart.xTicks.map((t) => t.label)).to.deep.equal(['06:30', '07:00', '07:30', '08:00', '08:30', '09:00']);
  });

  it('puts the same figures in the table, with a total when stacked', () => {
    const chart = barChart(
      input([
        [0.2, 0.4],
        [0, 0],
        [null, 1],
        [0, 0],
      ]),
    );
    expect(chart.table.head).to.deep.equal(['Time (UTC)', 'A', 'B', 'All']);
    expect(chart.table.rows).to.deep.equal([
      ['2026-11-21 06:00', '0.2', '0.4', '0.6'],
      ['2026-11-21 07:00', '0', '0', '0'],
      ['2026-11-21 08:00', '—', '1', '1'],
      ['2026-11-21 09:00', '0', '0', '0'],
    ]);
  });

  it('is empty when no bucket has a value', () => {
    expect(
      barChart(
        input([
          [0, 0],
          [null, null],
          [0, 0],
          [0, 0],
        ]),
      ).empty,
    ).to.equal('Nothing.');
    expect(
      barChart(
        input([
          [0, 0],
          [0, 1],
          [0, 0],
          [0, 0],
        ]),
      ).empty,
    ).to.equal(null);
  });
});
