import { expect } from 'chai';
import { traceTimeline } from '../../src/console/trace-timeline.js';

describe('traceTimeline()', () => {
  const at = (ms: number) => new Date(Date.parse('2026-11-24T09:00:00.000Z') + ms).toISOString();

  it('places each call from its start (its end less its duration) on one axis of the whole span, and marks a wait at its end', () => {
    const timeline = traceTimeline([
      { kind: 'model', name: 'm', duration_ms: 2000, error: 'the model endpoint answered HTTP 503; waited 1.5 s as it asked', created_at: at(2000) },
      { kind: 'tool', name: 't', duration_ms: 500, error: 'no such entry', created_at: at(3000) },
      { kind: 'model', name: 'm', duration_ms: 1000, error: null, created_at: at(4000) },
    ]);
    expect(timeline.spanMs).to.equal(4000);
    expect(timeline.bars.map((b) => [b.kind, b.x, b.width, b.waitWidth, b.waitedMs, b.failed])).to.deep.equal([
      ['model', 0, 500, 375, 1500, false],
      ['tool', 625, 125, 0, 0, true],
      ['model', 750, 250, 0, 0, false],
    ]);
  });

  it('has no span and no bars without calls', () => {
    expect(traceTimeline([])).to.deep.equal({ spanMs: 0, bars: [] });
  });
});
