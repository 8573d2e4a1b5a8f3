/**
 * The geometry of the console's charts: time buckets, value scales with round ticks, and bars
 * placed in an SVG's coordinates. Plain data only; views/partials/chart.ejs draws it (inline
 * SVG, no script) with the same figures as a table beside it.
 */

/** How chart times read. One place, so that a user's own time zone can replace UTC later. */
export interface ChartClock {
  /** The zone's name as the axis says it. */
  readonly zone: string;
  /** `09:05`: an axis tick. */
  time(ms: number): string;
  /** `2026-11-21 09:05`: a row of the table. */
  dateTime(ms: number): string;
}

export const utcClock: ChartClock = {
  zone: 'UTC',
  time: (ms) => new Date(ms).toISOString().slice(11, 16),
  dateTime: (ms) => new Date(ms).toISOString().slice(0, 16).replace('T', ' '),
};

/** The charts' times in the reader's zone (the one their times are shown in everywhere else). */
export function zoneClock(timeZone: string): ChartClock {
  if (timeZone === 'UTC') return utcClock;
  const parts = (ms: number) => {
    const format = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    const of = Object.fromEntries(format.formatToParts(new Date(ms)).map((p) => [p.type, p.value]));
    return { date: `${of.year}-${of.month}-${of.day}`, time: `${of.hour}:${of.minute}` };
  };
  return { zone: timeZone, time: (ms) => parts(ms).time, dateTime: (ms) => `${parts(ms).date} ${parts(ms).time}` };
}

/** `buckets` consecutive buckets of `bucketMs` each, the first starting at `start` (epoch ms). */
export interface TimeWindow {
  start: number;
  bucketMs: number;
  buckets: number;
}

/**
 * The `spanMs` up to the end of the bucket holding `now`, in buckets aligned on multiples of
 * `bucketMs` since the epoch (so on the clock for minutes and hours): the last bucket is the
 * one filling now.
 */
export function timeWindow(now: number, spanMs: number, bucketMs: number): TimeWindow {
  if (spanMs % bucketMs !== 0) throw new Error('The span must be a whole number of buckets');
  const end = (Math.floor(now / bucketMs) + 1) * bucketMs;
  return { start: end - spanMs, bucketMs, buckets: spanMs / bucketMs };
}

/** Each bucket as the ISO range of stored timestamps it holds, [from, to). */
export function bucketRanges(window: TimeWindow): Array<{ from: string; to: string }> {
  return Array.from({ length: window.buckets }, (_, i) => {
    const from = window.start + i * window.bucketMs;
    return { from: new Date(from).toISOString(), to: new Date(from + window.bucketMs).toISOString() };
  });
}

/** The value at quantile `q` (0..1) of ascending `sorted`, by the nearest-rank method; null when empty. */
export function quantile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[rank - 1]!;
}

export interface Scale {
  /** The top of the axis: the first tick at or above the largest value. */
  max: number;
  ticks: number[];
}

/**
 * A linear scale from 0 with at most `maxTicks` intervals, stepping by 1, 2 or 5 times a power
 * of ten, whose top tick reaches `max`. An empty or all-zero range gets the scale 0..1.
 */
export function niceScale(max: number, maxTicks = 4): Scale {
  if (!(max > 0)) return { max: 1, ticks: [0, 1] };
  const rough = max / maxTicks;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough * (1 - 1e-9))!;
  const count = Math.ceil(max / step - 1e-9);
  // Multiplying, not adding, keeps ticks such as 0.6 free of float residue.
  const ticks = Array.from({ length: count + 1 }, (_, i) => Number((i * step).toPrecision(12)));
  return { max: ticks.at(-1)!, ticks };
}

/** `0.4`, `12`, `1.25`: up to two decimals, none when whole. */
export function formatNumber(value: number): string {
  return String(Math.round(value * 100) / 100);
}

/** `850 ms`, `1.5 s`, `2.5 min`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${formatNumber(ms / 1000)} s`;
  return `${formatNumber(ms / 60_000)} min`;
}

export interface Series {
  key: string;
  label: string;
}

export interface ChartInput {
  /** Unique on the page: the SVG's title and description ids derive from it. */
  id: string;
  title: string;
  /** What one bar is, said under the title and to screen readers. */
  description: string;
  /** The y axis's unit, as its label says it. */
  unit: string;
  window: TimeWindow;
  clock: ChartClock;
  /** In drawing order: bottom to top when stacked, back to front when overlaid. */
  series: Series[];
  /** `stacked`: a bar's segments add up; `overlaid`: each starts at zero (a median drawn over its p95). */
  mode: 'stacked' | 'overlaid';
  /** Per bucket, per series, in the unit; null where there is nothing to show. */
  values: Array<Array<number | null>>;
  format: (value: number) => string;
  /** One more column of the table, a figure per bucket (how many receipts a latency is of). */
  extra?: { label: string; values: string[] };
  /** The empty state's heading, when no bucket has a value. */
  empty: string;
}

export interface Segment {
  key: string;
  label: string;
  value: number;
  y: number;
  height: number;
  /** The tooltip: `2026-11-21 09:05 UTC: fulfilled 1.2 receipts per minute`. */
  tip: string;
}

export interface Bar {
  x: number;
  width: number;
  /** The bucket's start, as the table and the tooltip say it. */
  when: string;
  segments: Segment[];
}

export interface Tick {
  at: number;
  label: string;
}

export interface Chart {
  id: string;
  title: string;
  description: string;
  unit: string;
  mode: ChartInput['mode'];
  series: Series[];
  empty: string | null;
  width: number;
  height: number;
  plot: { left: number; top: number; right: number; bottom: number };
  bars: Bar[];
  yTicks: Tick[];
  xTicks: Tick[];
  /** The x axis's label: `Time (UTC)`. */
  xLabel: string;
  table: { head: string[]; rows: string[][] };
}

/** The SVG's own coordinates (viewBox); the page scales it to the width it has. */
const WIDTH = 640;
const HEIGHT = 240;
const MARGIN = { left: 64, right: 12, top: 28, bottom: 44 };
/** Time labels along the x axis, at most: more would crowd on a phone. */
const MAX_X_TICKS = 6;

const round = (n: number) => Math.round(n * 100) / 100;

/** Places every bar, segment and tick of a bar chart over time, and the same figures as a table. */
export function barChart(input: ChartInput): Chart {
  const { window, clock, series, values, mode } = input;
  const plot = { left: MARGIN.left, top: MARGIN.top, right: WIDTH - MARGIN.right, bottom: HEIGHT - MARGIN.bottom };
  const plotHeight = plot.bottom - plot.top;
  const slot = (plot.right - plot.left) / window.buckets;
  const startOf = (i: number) => window.start + i * window.bucketMs;

  const heightOf = (bucket: Array<number | null>) => (mode === 'stacked' ? bucket.reduce<number>((sum, v) => sum + (v ?? 0), 0) : Math.max(0, ...bucket.map((v) => v ?? 0)));
  const scale = niceScale(Math.max(0, ...values.map(heightOf)));
  const yOf = (value: number) => round(plot.bottom - (value / scale.max) * plotHeight);

  const bars = values.map((bucket, i): Bar => {
    const when = `${clock.dateTime(startOf(i))} ${clock.zone}`;
    let base = 0;
    const segments: Segment[] = [];
    bucket.forEach((value, s) => {
      if (value === null || value <= 0) return;
      const from = mode === 'stacked' ? base : 0;
      base = from + value;
      const [top, bottom] = [yOf(from + value), yOf(from)];
      const { key, label } = series[s]!;
      segments.push({ key, label, value, y: top, height: round(bottom - top), tip: `${when}: ${label} ${input.format(value)} ${input.unit}` });
    });
    return { x: round(plot.left + i * slot + slot * 0.1), width: round(slot * 0.8), when, segments };
  });

  // A time label every so many buckets, on round times (every 30 minutes, every 4 hours).
  const every = Math.ceil(window.buckets / MAX_X_TICKS);
  const xTicks: Tick[] = [];
  for (let i = 0; i <= window.buckets; i++) {
    if (Math.floor(startOf(i) / window.bucketMs) % every === 0) xTicks.push({ at: round(plot.left + i * slot), label: clock.time(startOf(i)) });
  }

  const totals = mode === 'stacked' && series.length > 1;
  const head = [`Time (${clock.zone})`, ...series.map((s) => s.label), ...(totals ? ['All'] : []), ...(input.extra ? [input.extra.label] : [])];
  const cell = (v: number | null) => (v === null ? '—' : input.format(v));
  const rows = values.map((bucket, i) => [
    clock.dateTime(startOf(i)),
    ...bucket.map(cell),
    ...(totals ? [input.format(heightOf(bucket))] : []),
    ...(input.extra ? [input.extra.values[i] ?? ''] : []),
  ]);

  return {
    id: input.id,
    title: input.title,
    description: input.description,
    unit: input.unit,
    mode,
    series,
    empty: bars.some((bar) => bar.segments.length > 0) ? null : input.empty,
    width: WIDTH,
    height: HEIGHT,
    plot,
    bars,
    yTicks: scale.ticks.map((value) => ({ at: yOf(value), label: input.format(value) })),
    xTicks,
    xLabel: `Time (${clock.zone})`,
    table: { head, rows },
  };
}
