import { expect } from 'chai';
import { MAX_PAUSE_MS, createEndpointGate, retryAfterMs } from '../../src/agents/endpoint-gate.js';

const never = new AbortController().signal;
const settled = async (promise: Promise<unknown>) => {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setTimeout(resolve, 20));
  return done;
};

describe('createEndpointGate()', () => {
  it('lets calls through at once while the endpoint has not asked to wait', async () => {
    const gate = createEndpointGate();
    const tickets = await Promise.all([1, 2, 3].map(() => gate.enter('a', never)));
    expect(tickets.map((t) => t.waitedMs)).to.deep.equal([0, 0, 0]);
  });

  it('holds every call to a paused endpoint until the time it named, and not those to another endpoint', async () => {
    const gate = createEndpointGate();
    (await gate.enter('a', never)).leave(150);
    const started = Date.now();
    const other = await gate.enter('b', never);
    expect(other.waitedMs).to.equal(0);
    // The probe's wait counts from its own call, which a pause of the loaded machine may delay.
    const entered = Date.now();
    const probe = await gate.enter('a', never);
    expect(Date.now() - started).to.be.at.least(140);
    expect(probe.waitedMs).to.be.at.least(140 - (entered - started));
  });

  it('after a pause sends one call first, and the rest only when it was answered', async () => {
    const gate = createEndpointGate();
    (await gate.enter('a', never)).leave(30);
    const probe = await gate.enter('a', never);
    const rest = [gate.enter('a', never), gate.enter('a', never)];
    expect(await settled(Promise.race(rest)), 'the others wait for the probe').to.equal(false);
    probe.leave();
    const tickets = await Promise.all(rest);
    expect(tickets).to.have.length(2);
  });

  it('pauses again when the probe is told to wait again, and lets one call through after that pause', async () => {
    const gate = createEndpointGate();
    (await gate.enter('a', never)).leave(20);
    const probe = await gate.enter('a', never);
    const waiting = gate.enter('a', never);
    probe.leave(100);
    const started = Date.now();
    const next = await waiting;
    expect(Date.now() - started).to.be.at.least(90);
    const after = gate.enter('a', never);
    expect(await settled(after), 'the next is the probe; this one waits for it').to.equal(false);
    next.leave();
    await after;
  });

  it('caps a pause at 60 s, whatever the endpoint asked', async () => {
    let now = 1_000_000;
    const gate = createEndpointGate(() => now);
    (await gate.enter('a', never)).leave(10 * 60_000);
    now += MAX_PAUSE_MS;
    expect((await gate.enter('a', never)).waitedMs).to.equal(0);
  });

  it('stops waiting when the run is cancelled', async () => {
    const gate = createEndpointGate();
    (await gate.enter('a', never)).leave(5_000);
    const cancel = new AbortController();
    const waiting = gate.enter('a', cancel.signal);
    cancel.abort(new Error('cancelled'));
    const err = await waiting.catch((e: Error) => e);
    expect((err as Error).message).to.equal('cancelled');
  });
});

describe('retryAfterMs()', () => {
  it('reads retry-after-ms, Retry-After in seconds or as a date, for 429 and 503 only', () => {
    const at = Date.parse('2026-11-24T10:00:00Z');
    expect(retryAfterMs(429, new Headers({ 'retry-after': '2' }), at)).to.equal(2000);
    expect(retryAfterMs(503, new Headers({ 'retry-after': '0.5' }), at)).to.equal(500);
    expect(retryAfterMs(429, new Headers({ 'retry-after-ms': '250', 'retry-after': '9' }), at)).to.equal(250);
    expect(retryAfterMs(503, new Headers({ 'retry-after': 'Tue, 24 Nov 2026 10:00:03 GMT' }), at)).to.equal(3000);
    expect(retryAfterMs(429, new Headers(), at)).to.equal(undefined);
    expect(retryAfterMs(429, new Headers({ 'retry-after': 'soon' }), at)).to.equal(undefined);
    expect(retryAfterMs(500, new Headers({ 'retry-after': '2' }), at)).to.equal(undefined);
  });
});
