import type { RequestStatus } from '../requests/schemas.js';
import type { ConsoleReads } from './queries.js';
import { barChart, bucketRanges, formatDuration, formatNumber, quantile, timeWindow, type Chart, type ChartClock, type Series, type TimeWindow } from './charts.js';

/**
 * What the console charts: receipts by status and 202 → fulfilled latency over the last
 * hours on the dashboard, a scribe's receipts per hour over the last day on its page.
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** The dashboard's window: the last 3 hours in 5-minute buckets (36 bars). */
export const DASHBOARD_SPAN = { spanMs: 3 * HOUR, bucketMs: 5 * MINUTE };
/** A scribe's page: the last 24 hours in hours. */
export const SCRIBE_SPAN = { spanMs: 24 * HOUR, bucketMs: HOUR };
/**
 * The latency chart ranks at most this many fulfilled receipts per bucket (the first created in
 * it), 3,600 over the dashboard's 36 buckets: enough for a p95 (the 5th slowest of 100), bounded however busy.
 */
export const LATENCY_SAMPLES_PER_BUCKET = 100;

/** Bottom to top: what is done first, what still moves on top. */
const STATUS_SERIES: Array<Series & { key: RequestStatus }> = [
  { key: 'fulfilled', label: 'fulfilled' },
  { key: 'failed', label: 'failed' },
  { key: 'dispatched', label: 'dispatched' },
  { key: 'accepted', label: 'accepted' },
];

export interface DashboardCharts {
  receipts: Chart;
  latency: Chart;
}

/** Both dashboard charts, from two aggregate reads over the organization's last 3 hours. */
export async function dashboardCharts(reads: ConsoleReads, organizationId: string, now: number, clock: ChartClock): Promise<DashboardCharts> {
  const window = timeWindow(now, DASHBOARD_SPAN.spanMs, DASHBOARD_SPAN.bucketMs);
  const buckets = bucketRanges(window);
  const [counts, latencies] = await Promise.all([reads.receiptsByBucket(organizationId, buckets), reads.fulfilledLatencies(organizationId, buckets, LATENCY_SAMPLES_PER_BUCKET)]);
  return { receipts: receiptsChart(counts, window, clock), latency: latencyChart(latencies, window, clock) };
}

/** A scribe's receipts per hour over its last day, by status. */
export async function scribeThroughputChart(reads: ConsoleReads, organizationId: string, scribeId: string, now: number, clock: ChartClock): Promise<Chart> {
  const window = timeWindow(now, SCRIBE_SPAN.spanMs, SCRIBE_SPAN.bucketMs);
  const counts = await reads.receiptsByBucket(organizationId, bucketRanges(window), scribeId);
  return barChart({
    id: 'scribe-throughput',
    title: 'Receipts per hour, last 24 hours',
    description: 'Each bar is one hour of receipts this scribe accepted, stacked by their status now.',
    unit: 'receipts per hour',
    window,
    clock,
    series: STATUS_SERIES,
    mode: 'stacked',
    values: byStatus(counts, 1),
    format: formatNumber,
    empty: 'No receipts in the last 24 hours.',
  });
}

/** Per bucket, per status. */
type StatusCounts = Array<Record<RequestStatus, number>>;

export function receiptsChart(counts: StatusCounts, window: TimeWindow, clock: ChartClock): Chart {
  const minutes = window.bucketMs / MINUTE;
  return barChart({
    id: 'receipts-per-minute',
    title: 'Receipts per minute, last 3 hours',
    description: `Each bar is ${minutes} minutes of receipts accepted (answered 202), averaged per minute and stacked by their status now.`,
    unit: 'receipts per minute',
    window,
    clock,
    series: STATUS_SERIES,
    mode: 'stacked',
    values: byStatus(counts, minutes),
    format: formatNumber,
    empty: 'No receipts in the last 3 hours.',
  });
}

/** `perBucket`: each bucket's 202 → fulfilled times, in ms. */
export function latencyChart(perBucket: number[][], window: TimeWindow, clock: ChartClock): Chart {
  const values = perBucket.map((ms) => {
    ms.sort((a, b) => a - b);
    return [quantile(ms, 0.95), quantile(ms, 0.5)];
  });
  return barChart({
    id: 'fulfil-latency',
    title: '202 → fulfilled, last 3 hours',
    description: `Each bar is the receipts accepted in ${window.bucketMs / MINUTE} minutes and fulfilled since: the time from the 202 to fulfilled, the median drawn over the 95th percentile.`,
    unit: 'time to fulfilled',
    window,
    clock,
    series: [
      { key: 'p95', label: '95th percentile' },
      { key: 'median', label: 'median' },
    ],
    mode: 'overlaid',
    values,
    format: formatDuration,
    extra: { label: 'Fulfilled', values: perBucket.map((ms) => (ms.length >= LATENCY_SAMPLES_PER_BUCKET ? `first ${ms.length}` : String(ms.length))) },
    empty: 'No receipts fulfilled in the last 3 hours.',
  });
}

/** Per bucket, per status series: the count divided by `per` (5 for a per-minute rate of 5-minute buckets). */
function byStatus(counts: StatusCounts, per: number): number[][] {
  return counts.map((bucket) => STATUS_SERIES.map((series) => bucket[series.key] / per));
}
