import type { AgentCallRow } from '../agents/queries.js';
import { waitedMsOf } from '../agents/openai.js';

/** The width of a bar's drawing, in SVG units; the SVG stretches it to the lane. */
export const TIMELINE_UNITS = 1000;

export interface TimelineBar {
  kind: 'model' | 'tool';
  name: string;
  durationMs: number;
  /** Where the call began and how long it lasted, in TIMELINE_UNITS of the whole span. */
  x: number;
  width: number;
  /** The part spent waiting for the endpoint's back-pressure (at the bar's end), 0 when none. */
  waitWidth: number;
  waitedMs: number;
  failed: boolean;
}

/**
 * A trace's calls placed on one time axis. A call's row is written when it ends, so it began
 * `duration_ms` before its `created_at`; a call that waited at the endpoint's gate ends with
 * its wait.
 */
export function traceTimeline(calls: readonly Pick<AgentCallRow, 'kind' | 'name' | 'duration_ms' | 'error' | 'created_at'>[]) {
  const spans = calls.map((call) => {
    const end = Date.parse(call.created_at);
    return { call, start: end - call.duration_ms, end };
  });
  const from = Math.min(...spans.map((s) => s.start));
  const to = Math.max(...spans.map((s) => s.end));
  const spanMs = Math.max(1, to - from);
  const units = (ms: number) => Math.round((ms / spanMs) * TIMELINE_UNITS * 10) / 10;
  const bars: TimelineBar[] = spans.map(({ call, start }) => {
    const waitedMs = call.kind === 'model' ? Math.min(waitedMsOf(call.error), call.duration_ms) : 0;
    return {
      kind: call.kind,
      name: call.name,
      durationMs: call.duration_ms,
      x: units(start - from),
      width: units(call.duration_ms),
      waitWidth: units(waitedMs),
      waitedMs,
      failed: call.error !== null && waitedMs === 0,
    };
  });
  return { spanMs: calls.length === 0 ? 0 : spanMs, bars };
}
