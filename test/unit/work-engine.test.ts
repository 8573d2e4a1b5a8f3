import { expect } from 'chai';
import { createLogger } from '../../src/logger.js';
import { shareSlots, workQueue, type ClaimTerms, type Queue, type QueueOptions } from '../../src/work/engine.js';

type Outcome = 'done' | 'retried' | 'failed';

interface Item {
  id: string;
  key: string;
  attempts: number;
}

/**
 * A queue held in memory, so that the engine's own rules show without a database: `due`
 * items are claimed in order (passing over keys at their cap), and what each step wrote is
 * in `log`. `run` is the test's; `inconclusive` claims say that finding nothing proves nothing.
 */
function memoryQueue(
  run: Queue<Item, Outcome>['run'],
  {
    options,
    inconclusive = false,
    ...declared
  }: { options?: Partial<QueueOptions>; inconclusive?: boolean } & Pick<Partial<Queue<Item, Outcome>>, 'caps' | 'runBatch' | 'cancelled' | 'tidy'> = {},
) {
  const due: Item[] = [];
  /** Items given back for a retry: due once the test says their back-off is over. */
  const retrying: Item[] = [];
  const log: string[] = [];
  let claims = 0;
  /** How many items each claim took. */
  const sizes: number[] = [];
  /** What each claim was told besides its token. */
  const asked: Array<Pick<ClaimTerms, 'limit' | 'open' | 'refillOnly'>> = [];
  /** Holds the next claim until released, with what it will find fixed at its start. */
  let gate: Promise<void> | undefined;
  const queue: Queue<Item, Outcome> = {
    name: 'memory',
    options: { slots: 2, leaseMs: 60_000, maxAttempts: 3, backoffMs: (attempt) => attempt * 1000, ...options },
    outcomes: ['done', 'retried', 'failed'],
    ...declared,
    keysOf: (item) => ({ key: item.key }),
    async claim({ limit, open, refillOnly, full, room }) {
      claims++;
      asked.push({ limit, open, refillOnly });
      const taken: Item[] = [];
      for (const item of due.filter((d) => !(full.key ?? []).includes(d.key))) {
        if (taken.length < limit && taken.filter((t) => t.key === item.key).length < room('key', item.key)) taken.push(item);
      }
      for (const item of taken) due.splice(due.indexOf(item), 1);
      sizes.push(taken.length);
      await gate;
      const items = taken.map((item) => ({ ...item, attempts: item.attempts + 1 }));
      return inconclusive ? { items, inconclusive } : items;
    },
    run,
    retry: async (claim, item, retryAt) => {
      log.push(`retry ${claim.id} at ${retryAt}`);
      retrying.push(item);
    },
    giveUp: async (claim) => void log.push(`gave up ${claim.id}`),
    handBack: async (claim, item) => {
      log.push(`handed back ${claim.id}`);
      due.push({ ...item, attempts: item.attempts - 1 });
    },
  };
  const worker = workQueue(queue, { clock: () => new Date(0), logger: createLogger('silent') });
  return {
    worker,
    due,
    log,
    backOffOver: () => due.push(...retrying.splice(0)),
    add: (id: string, key = 'a') => due.push({ id, key, attempts: 0 }),
    get claims() {
      return claims;
    },
    sizes,
    asked,
    hold() {
      let release!: () => void;
      gate = new Promise((resolve) => (release = resolve));
      return () => {
        gate = undefined;
        release();
      };
    },
  };
}

const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A run that ends done after `ms`. */
const doneAfter = (ms: number) => async () => {
  await later(ms);
  return 'done' as const;
};

/** Resolves once `check()` holds, looking every millisecond; fails after ten seconds (patience for a loaded machine). */
async function until(check: () => boolean): Promise<void> {
  for (const started = Date.now(); !check(); await later(1)) if (Date.now() - started > 10_000) expect.fail('not in ten seconds');
}

describe('the work engine', () => {
  it('works everything due in a tick, never more than its slots at once, and counts what came of it', async () => {
    let running = 0;
    let most = 0;
    const q = memoryQueue(async () => {
      most = Math.max(most, ++running);
      await later(5);
      running--;
      return 'done';
    });
    for (let i = 0; i < 7; i++) q.add(`item ${i}`, `key ${i}`);
    expect(await q.worker.tick()).to.deep.equal({ done: 7, retried: 0, failed: 0 });
    expect(most).to.equal(2);
    expect(q.due).to.have.length(0);
  });

  it('passes over a key at its cap and gives the free slot to another key meanwhile', async () => {
    const order: string[] = [];
    const q = memoryQueue(
      async (item) => {
        order.push(`start ${item.id}`);
        await later(item.key === 'slow' ? 30 : 1);
        return 'done';
      },
      { options: { slots: 2 }, caps: { key: 1 } },
    );
    q.add('slow 1', 'slow');
    q.add('slow 2', 'slow');
    q.add('quick 1', 'quick');
    q.add('quick 2', 'quick');
    await q.worker.tick();
    // The second slow item waits for the first; both quick ones go in the other slot meanwhile.
    expect(order).to.deep.equal(['start slow 1', 'start quick 1', 'start quick 2', 'start slow 2']);
  });

  it('retries a failure after its back-off, and gives it up after its attempts', async () => {
    const q = memoryQueue(async () => {
      throw new Error('boom');
    });
    q.add('bad');
    expect(await q.worker.tick()).to.deep.equal({ done: 0, retried: 1, failed: 0 });
    expect(await q.worker.tick(), 'not before its back-off').to.deep.equal({ done: 0, retried: 0, failed: 0 });
    q.backOffOver();
    expect(await q.worker.tick()).to.deep.equal({ done: 0, retried: 1, failed: 0 });
    q.backOffOver();
    expect(await q.worker.tick()).to.deep.equal({ done: 0, retried: 0, failed: 1 });
    expect(q.log).to.deep.equal(['retry bad at 1970-01-01T00:00:01.000Z', 'retry bad at 1970-01-01T00:00:02.000Z', 'gave up bad']);
  });

  it('runs a claimed batch item by item when the batch fails, so one bad item does not hold up the rest', async () => {
    const batches: string[][] = [];
    const run = async (item: Item) => {
      if (item.id === 'bad') throw new Error('boom');
      return 'done' as const;
    };
    const q = memoryQueue(run, {
      options: { batchSize: 10 },
      runBatch: async (items) => {
        batches.push(items.map((item) => item.id));
        return Promise.all(items.map(run));
      },
    });
    q.add('good 1');
    q.add('bad');
    q.add('good 2');
    expect(await q.worker.tick()).to.deep.equal({ done: 2, retried: 1, failed: 0 });
    expect(batches).to.deep.equal([['good 1', 'bad', 'good 2']]);
  });

  it('shares one follow-up claim among the fills made while a claim runs', async () => {
    const q = memoryQueue(async () => 'done');
    const release = q.hold();
    q.worker.fill();
    await later(1);
    for (let i = 0; i < 5; i++) q.worker.nudge();
    release();
    await later(5);
    // The held claim, and one follow-up for the five nudges.
    expect(q.claims).to.equal(2);
  });

  it('refills the slots freed by runs that end within claimGapMs of the last claim with one claim, not one claim each', async () => {
    const q = memoryQueue(
      async (item) => {
        // The first four end 1,000, 1,005, 1,010 and 1,015 ms in; the rest at once.
        await later(item.id.startsWith('long') ? 1000 + 5 * Number(item.id.slice(-1)) : 1);
        return 'done';
      },
      { options: { slots: 4, claimGapMs: 40 } },
    );
    for (let i = 0; i < 4; i++) q.add(`long ${i}`, `key ${i}`);
    for (let i = 0; i < 4; i++) q.add(`quick ${i}`, `key ${i}`);
    expect(await q.worker.tick()).to.deep.equal({ done: 8, retried: 0, failed: 0 });
    // The first end, long after the first claim, refills at once; the three that end within
    // the gap after that claim (40 ms, under a twentieth of the runs' 1,000) share the next.
    expect(q.sizes.slice(0, 3)).to.deep.equal([4, 1, 3]);
  });

  it('tells a claim how many slots are open beside how many it may take, and whether it only refills slots of units that ended', async () => {
    const q = memoryQueue(doneAfter(1), { options: { slots: 3, growthPerSecond: 10 } });
    for (let i = 0; i < 2; i++) q.add(`item ${i}`, `key ${i}`);
    q.worker.fill();
    // From idle, the pace of growth lets one start of the three open slots.
    await until(() => q.asked.length > 0);
    expect(q.asked[0]).to.deep.equal({ limit: 1, open: 3, refillOnly: false });
    await until(() => q.due.length === 0 && q.worker.running === 0);
    // What came after only refilled the slot of the unit that ended, or the pace held back.
    const after = q.asked.slice(1);
    expect(after).to.have.length.above(0);
    expect(after.filter((terms) => !terms.refillOnly)).to.deep.equal([]);
    q.add('item 2', 'key 2');
    q.worker.nudge();
    await until(() => q.due.length === 0);
    expect(q.asked.at(-1)).to.include({ refillOnly: false });
  });

  it('waits at most a twentieth of what runs typically take for more slots to free, whatever claimGapMs', async () => {
    const q = memoryQueue(doneAfter(2), { options: { slots: 2, claimGapMs: 60_000 } });
    for (let i = 0; i < 8; i++) q.add(`item ${i}`, `key ${i}`);
    // Runs of 2 ms: a claim gap of a minute would hold the tick for minutes.
    expect(await q.worker.tick()).to.deep.equal({ done: 8, retried: 0, failed: 0 });
    // The gap is the twentieth itself, not claimGapMs, whatever the runs took on a loaded machine (timers there fire late).
    const typical = q.worker.typicalRunMs!;
    expect(typical * 20).to.be.below(60_000);
    expect(q.worker.gapWithin(60_000)).to.be.closeTo(typical / 20, 1e-9);
    // A gap that holds no slot (the runtime's commit gap) may take a larger share.
    expect(q.worker.gapWithin(60_000, 1 / 10)).to.be.closeTo(typical / 10, 1e-9);
    expect(q.worker.gapWithin(typical / 40, 1 / 10)).to.equal(typical / 40);
  });

  it('starts what a claim round took without first claiming into the slots freed while the round ran', async () => {
    const due = ['a', 'b', 'x1', 'x2'].map((id) => ({ id }));
    const started: string[] = [];
    const ends = new Map<string, () => void>();
    const blocked: Array<() => void> = [];
    let slowClaims = false;
    const worker = workQueue<{ id: string }, 'done'>(
      {
        name: 'rounds',
        options: { slots: 2, leaseMs: 60_000 },
        outcomes: ['done'],
        // One item a claim, and never conclusive: a round goes on claiming while it has slots to fill.
        async claim({ limit }) {
          const items = due.splice(0, Math.min(1, limit));
          if (slowClaims) await new Promise<void>((resolve) => blocked.push(resolve));
          return { items, inconclusive: true };
        },
        run: (item) =>
          new Promise((resolve) => {
            started.push(item.id);
            ends.set(item.id, () => resolve('done'));
          }),
      },
      { clock: () => new Date(0), logger: createLogger('silent') },
    );
    worker.fill();
    for (let i = 0; i < 50 && started.length < 2; i++) await later(5);
    expect(started).to.deep.equal(['a', 'b']);
    slowClaims = true;
    // a ends: a round for its one slot claims x1, held. b ends meanwhile: its slot is the next round's.
    ends.get('a')!();
    for (let i = 0; i < 50 && blocked.length < 1; i++) await later(5);
    ends.get('b')!();
    await later(10);
    blocked.shift()!();
    for (let i = 0; i < 50 && started.length < 3; i++) await later(5);
    // x1 started while the next round's claim (x2, for b's slot) is still held.
    expect(started).to.deep.equal(['a', 'b', 'x1']);
    expect(blocked).to.have.length(1);
    blocked.shift()!();
    for (let i = 0; i < 50 && started.length < 4; i++) await later(5);
    expect(started).to.deep.equal(['a', 'b', 'x1', 'x2']);
    slowClaims = false;
    for (const end of ends.values()) end();
    await worker.stop();
  });

  it('refills the slot of a lone run that ended at once, whatever claimGapMs', async () => {
    const q = memoryQueue(async () => 'done', { options: { slots: 1, claimGapMs: 60_000 } });
    q.add('first');
    q.add('second');
    // The second claim would wait a minute if the gap applied; the tick would outlast the test.
    expect(await q.worker.tick()).to.deep.equal({ done: 2, retried: 0, failed: 0 });
    q.add('third');
    q.worker.fill();
    for (let i = 0; i < 40 && q.due.length > 0; i++) await later(10);
    expect(q.due).to.have.length(0);
  });

  it('grows the units in flight at growthPerSecond, and refills the slots of units that ended at once, whatever the pace', async () => {
    const ends: Array<() => void> = [];
    const q = memoryQueue(() => new Promise((resolve) => ends.push(() => resolve('done'))), { options: { slots: 40, claimGapMs: 5, growthPerSecond: 100 } });
    for (let i = 0; i < 60; i++) q.add(`item ${i}`, `key ${i}`);
    const began = performance.now();
    /** Runs started by then, against the most the pace allows by then: 10 built up, and 100 a second. */
    const paced: Array<{ running: number; most: number }> = [];
    q.worker.fill();
    await until(() => {
      paced.push({ running: ends.length, most: 10 + Math.ceil((100 * (performance.now() - began)) / 1000) });
      return ends.length === 40;
    });
    expect(paced.find((p) => p.running > 0)!.running, 'what built up goes at once').to.be.at.least(10);
    expect(paced.filter((p) => p.running > p.most)).to.deep.equal([]);
    expect(q.claims, 'a claim every claimGapMs or so, not one a unit').to.be.within(10, 40);
    // Twenty end together: their slots refill in the next claim, not ten at a time.
    const claimsBefore = q.claims;
    for (const end of ends.splice(0, 20)) end();
    await until(() => ends.length === 40);
    expect(q.claims - claimsBefore).to.equal(1);
    expect(q.due).to.have.length(0);
    for (const end of ends.splice(0)) end();
    await q.worker.stop();
  });

  it('lets the event loop turn between claims that would follow one another within one turn, and claims new work at once', async () => {
    const q = memoryQueue(async () => 'done', { options: { slots: 1 } });
    for (let i = 0; i < 20; i++) q.add(`item ${i}`);
    let turns = 0;
    let ticking = true;
    const turn = () => {
      turns++;
      if (ticking) setImmediate(turn);
    };
    setImmediate(turn);
    // A memory queue's claims and runs resolve without I/O, as SQLite's do.
    expect(await q.worker.tick()).to.deep.equal({ done: 20, retried: 0, failed: 0 });
    ticking = false;
    // Twenty claims and one that found nothing: a turn of the loop between each two.
    expect(q.claims).to.equal(21);
    expect(turns).to.be.at.least(20);
    await later(5);
    q.add('new');
    q.worker.nudge();
    const claimsBeforeTurn = await new Promise((resolve) => setImmediate(() => resolve(q.claims)));
    expect(claimsBeforeTurn, 'claimed before the next turn').to.equal(22);
  });

  it("shares free slots among keys in turn: as many each, within each one's room, none to a key without room", () => {
    const room: Record<string, number> = { a: Infinity, b: 1, c: 0, d: Infinity };
    expect(shareSlots(9, ['a', 'b', 'c', 'd'], (key) => room[key]!)).to.deep.equal([
      ['a', 2],
      ['b', 1],
      ['d', 2],
    ]);
    // Fewer slots than keys: one each, in turn, while they last.
    expect(shareSlots(2, ['a', 'b', 'd'], (key) => room[key]!)).to.deep.equal([
      ['a', 1],
      ['b', 1],
    ]);
  });

  it('remembers a claim that found nothing until a nudge, and does not let a claim that started before the nudge record its finding', async () => {
    const q = memoryQueue(async () => 'done');
    await q.worker.tick();
    const looked = q.claims;
    q.worker.fill();
    await later(1);
    expect(q.claims - looked, 'a fill looks anew').to.equal(1);

    // A claim starts, finding nothing; the item arrives, and its nudge, before the claim ends.
    const release = q.hold();
    q.worker.fill();
    await later(1);
    q.add('late');
    q.worker.nudge();
    release();
    await later(5);
    expect(q.due, 'the follow-up claim took it without waiting for the poll').to.have.length(0);
  });

  it('tidies once idle after a drain of tidyAfter items, one tidy at a time, and tick and stop wait for it', async () => {
    const tidies: string[] = [];
    let gate: Promise<void> | undefined;
    let failing = false;
    const q = memoryQueue(doneAfter(2), {
      options: { tidyAfter: 3 },
      async tidy() {
        tidies.push(`began: ${q.due.length} due, ${q.worker.running} running`);
        await gate;
        await later(10);
        if (failing) throw new Error('vacuum refused');
        tidies.push('ended');
      },
    });
    q.add('a');
    q.add('b');
    await q.worker.tick();
    expect(tidies, 'two items claimed: fewer than tidyAfter').to.deep.equal([]);
    q.add('c');
    await q.worker.tick();
    expect(tidies, 'the third: tidied once, idle, and the tick waited for it').to.deep.equal(['began: 0 due, 0 running', 'ended']);
    await q.worker.tick();
    expect(tidies, 'nothing claimed since').to.have.length(2);

    // A drain that ends while a tidy is under way is tidied at the next idle look, not twice at once.
    for (const id of ['d', 'e', 'f']) q.add(id);
    let release!: () => void;
    gate = new Promise((resolve) => (release = resolve));
    q.worker.fill();
    await until(() => tidies.length === 3);
    expect(tidies).to.deep.equal(['began: 0 due, 0 running', 'ended', 'began: 0 due, 0 running']);
    for (const id of ['g', 'h', 'i']) q.add(id);
    q.worker.fill();
    await until(() => q.due.length === 0 && q.worker.running === 0);
    await later(20);
    expect(tidies, 'still the one tidy').to.have.length(3);
    release();
    await until(() => tidies.length === 4);
    gate = undefined;
    expect(tidies.at(-1)).to.equal('ended');
    failing = true;
    expect(await q.worker.tick(), 'a failed tidy is logged, not thrown').to.deep.equal({ done: 0, retried: 0, failed: 0 });
    expect(tidies.slice(3), 'the drain made during the tidy, tidied at the next idle look').to.deep.equal(['ended', 'began: 0 due, 0 running']);

    // stop() waits for a tidy under way.
    failing = false;
    for (const id of ['j', 'k', 'l']) q.add(id);
    gate = new Promise((resolve) => (release = resolve));
    q.worker.fill();
    await until(() => tidies.length === 6);
    let stopped = false;
    const stopping = q.worker.stop().then(() => (stopped = true));
    await later(20);
    expect(stopped, 'stop waits for the tidy').to.equal(false);
    release();
    await stopping;
    expect(tidies.at(-1)).to.equal('ended');
  });

  it('stops claiming at once, lets running work finish for drainMs, then aborts the rest and hands it back', async () => {
    const q = memoryQueue(
      (item, { signal }) =>
        new Promise((resolve, reject) => {
          if (item.id === 'quick') setTimeout(() => resolve('done'), 10);
          signal.addEventListener('abort', () => reject(signal.reason));
        }),
    );
    q.add('quick');
    q.add('stuck');
    q.add('waiting');
    q.worker.fill();
    await later(2);
    expect(q.worker.running).to.equal(2);
    await q.worker.stop({ drainMs: 50 });
    expect(q.worker.running).to.equal(0);
    expect(q.log).to.deep.equal(['handed back stuck']);
    expect(q.due.map((item) => item.id)).to.deep.equal(['waiting', 'stuck']);
    q.worker.nudge();
    await later(5);
    expect(q.due, 'nothing claimed after stop').to.have.length(2);
  });

  it("gives each run a signal of its own that stop() aborts, composing none with the engine's stop signal", async () => {
    const signals: AbortSignal[] = [];
    const q = memoryQueue(
      (item, { signal }) => {
        signals.push(signal);
        if (item.id !== 'held') return Promise.resolve('done');
        return new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      },
      { options: { slots: 4 } },
    );
    // AbortSignal.any keeps each composite listed on a long-lived source until that aborts
    // (nodejs/node#64476): one composed per run with the engine's stop signal would pile up there.
    const any = AbortSignal.any;
    let composed = 0;
    AbortSignal.any = (sources) => {
      composed++;
      return any.call(AbortSignal, sources);
    };
    try {
      for (let i = 0; i < 20; i++) q.add(`item${i}`);
      expect(await q.worker.tick()).to.deep.equal({ done: 20, retried: 0, failed: 0 });
      q.add('held');
      q.worker.fill();
      await later(2);
      expect(q.worker.running).to.equal(1);
      await q.worker.stop();
    } finally {
      AbortSignal.any = any;
    }
    expect(composed).to.equal(0);
    expect(new Set(signals).size).to.equal(21);
    expect(signals.slice(0, 20).some((signal) => signal.aborted)).to.equal(false);
    expect(signals[20]!.aborted).to.equal(true);
    expect((signals[20]!.reason as Error).message).to.equal('stopping');
    expect(q.log).to.deep.equal(['handed back held']);
  });

  it('cancels one run by id: its signal aborts and nothing is recorded for it', async () => {
    const q = memoryQueue(
      (_item, { signal }) =>
        new Promise((resolve, reject) => {
          setTimeout(() => resolve('done'), 30);
          signal.addEventListener('abort', () => reject(signal.reason));
        }),
    );
    q.add('kept');
    q.add('cancelled');
    const ticked = q.worker.tick();
    await later(2);
    q.worker.cancel('cancelled');
    expect(await ticked).to.deep.equal({ done: 1, retried: 0, failed: 0 });
    expect(q.log).to.deep.equal([]);
  });

  it('asks which running items were cancelled elsewhere every cancelCheckMs, cancels those, and asks nothing while idle', async () => {
    const elsewhere = new Set<string>();
    const asked: string[][] = [];
    // 'kept' ends once a look has asked about it alone (after the cancel), not after a time a
    // loaded machine's timers may overrun; after 2 s at the latest, for the assertion below to tell.
    let keptAlone = () => {};
    const askedAboutKeptAlone = new Promise<void>((resolve) => (keptAlone = resolve));
    const q = memoryQueue(
      (item, { signal }) =>
        new Promise((resolve, reject) => {
          setTimeout(() => resolve('done'), 2_000);
          if (item.id === 'kept') void askedAboutKeptAlone.then(() => resolve('done'));
          signal.addEventListener('abort', () => reject(signal.reason));
        }),
      {
        options: { cancelCheckMs: 10 },
        cancelled: async (items) => {
          const ids = items.map((item) => item.id).sort();
          asked.push(ids);
          if (ids.join() === 'kept') keptAlone();
          return items.filter((item) => elsewhere.has(item.id)).map((item) => item.id);
        },
      },
    );
    q.add('kept');
    q.add('cancelled');
    const ticked = q.worker.tick();
    await later(5);
    elsewhere.add('cancelled');
    expect(await ticked).to.deep.equal({ done: 1, retried: 0, failed: 0 });
    expect(q.log, 'nothing recorded for the cancelled run').to.deep.equal([]);
    expect(asked[0]).to.deep.equal(['cancelled', 'kept']);
    expect(asked.at(-1), 'asked about what still ran').to.deep.equal(['kept']);
    const looks = asked.length;
    await later(40);
    expect(asked, 'no look with nothing running').to.have.length(looks);
  });

  /** One item runs while a claim finds nothing; another arrives unannounced. Whether the first's end claims it. */
  async function claimedAfterRun(declared: { inconclusive?: boolean; lookAnew?: boolean; released?: boolean }): Promise<boolean> {
    const q = memoryQueue(
      async (item, { lookAnewAfter, released }) => {
        if (declared.lookAnew) lookAnewAfter();
        if (declared.released) released();
        if (item.id === 'first') await later(20);
        return 'done';
      },
      { inconclusive: declared.inconclusive },
    );
    q.add('first');
    q.worker.fill();
    await later(5);
    q.add('unannounced');
    await later(40);
    return q.due.length === 0;
  }

  it("refills a freed slot from the claim's memory of finding nothing, unless that claim was inconclusive or the run asked for a fresh look", async () => {
    expect(await claimedAfterRun({}), 'remembered: nothing due').to.equal(false);
    expect(await claimedAfterRun({ inconclusive: true }), 'an inconclusive claim is not remembered').to.equal(true);
    expect(await claimedAfterRun({ lookAnew: true }), 'a run that freed work looks anew').to.equal(true);
    expect(await claimedAfterRun({ lookAnew: true, released: true }), 'at its end, not when it released its slot').to.equal(true);
  });

  /** A queue whose runs release their slot and then wait to write their record until the test lets them. */
  function writingQueue(slots: number) {
    const log: string[] = [];
    const writes = new Map<string, () => void>();
    const q = memoryQueue(
      async (item, { released }) => {
        log.push(`start ${item.id}`);
        await later(1);
        released();
        await new Promise<void>((resolve) => writes.set(item.id, resolve));
        log.push(`written ${item.id}`);
        return 'done';
      },
      { options: { slots } },
    );
    const write = (id: string) => {
      writes.get(id)!();
      writes.delete(id);
    };
    return { q, log, writes, write };
  }

  it("refills a released slot while the run's record is written, and tick and stop wait for the record", async () => {
    const { q, log, writes, write } = writingQueue(1);
    q.add('first');
    q.add('second');
    const ticked = q.worker.tick();
    let settled = false;
    void ticked.then(() => (settled = true));
    await until(() => writes.has('first') && log.includes('start second'));
    expect(log, 'the second started while the first was being written').to.deep.equal(['start first', 'start second']);
    write('first');
    await until(() => writes.has('second'));
    await later(5);
    expect(settled, 'tick waits for the record').to.equal(false);
    write('second');
    expect(await ticked).to.deep.equal({ done: 2, retried: 0, failed: 0 });
    expect(log).to.deep.equal(['start first', 'start second', 'written first', 'written second']);

    q.add('third');
    q.worker.fill();
    await until(() => writes.has('third'));
    let stopped = false;
    const stopping = q.worker.stop().then(() => (stopped = true));
    await later(5);
    expect(stopped, 'stop waits for the record').to.equal(false);
    write('third');
    await stopping;
    expect(log.at(-1)).to.equal('written third');
  });

  it('keeps the slot of a run that releases it while as many runs are being written as there are slots', async () => {
    const { q, log, writes, write } = writingQueue(1);
    for (const id of ['first', 'second', 'third']) q.add(id);
    const ticked = q.worker.tick();
    await until(() => writes.has('first') && writes.has('second'));
    await later(10);
    expect(log, 'one run written at a time beside the one slot: the third waits').to.deep.equal(['start first', 'start second']);
    write('first');
    await later(10);
    expect(log, 'the second kept its slot to its end').to.not.include('start third');
    write('second');
    await until(() => writes.has('third'));
    write('third');
    expect(await ticked).to.deep.equal({ done: 3, retried: 0, failed: 0 });
  });
});
