import { expect } from 'chai';
import { createHarness, type Harness } from '../helpers/harness.js';
import { createJobs, type Job } from '../../src/jobs/queue.js';
import { createBackground } from '../../src/work/background.js';
import { createLogger } from '../../src/logger.js';

describe('maintenance jobs', () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(() => h.close());

  /** Jobs polled as a process polls them, with a poll shorter than a second so that no fire is missed. */
  async function started(jobs: Job[], clock = () => new Date()) {
    const runner = createJobs({ db: h.db, clock, logger: createLogger('silent'), jobs });
    const background = createBackground({ runners: [runner], wakeups: h.services.wakeups, pollMs: 100 });
    await background.start();
    return background;
  }
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('runs a job every second until stopped, and survives a job that throws', async () => {
    let runs = 0;
    const background = await started([
      {
        name: 'counting',
        schedule: '* * * * * *',
        run: async () => {
          runs++;
          throw new Error('a job that fails must not stop the schedule');
        },
      },
    ]);
    await sleep(2300);
    await background.stop();
    expect(runs).to.be.within(2, 3);
    const stoppedAt = runs;
    await sleep(1100);
    expect(runs, 'no run after stop').to.equal(stoppedAt);
  });

  it('runs each fire once per database, however many processes look', async () => {
    let runs = 0;
    const job: Job = { name: 'once', schedule: '* * * * * *', run: async () => void runs++ };
    const processes = await Promise.all([started([job]), started([job]), started([job])]);
    await sleep(2300);
    await Promise.all(processes.map((p) => p.stop()));
    expect(runs).to.be.within(2, 3);
    const recorded = await h.db('job_runs').where({ job: 'once' }).count({ n: '*' }).first();
    expect(Number(recorded!.n)).to.equal(runs);
  });

  it('waits on stop for a run under way, up to the time it is given', async () => {
    let finished = 0;
    // Longer than the second it starts in: a run is surely under way 1.2 s after start.
    const slow = await started([{ name: 'slow', schedule: '* * * * * *', run: () => new Promise<void>((resolve) => setTimeout(() => resolve(void finished++), 1_500)) }]);
    await sleep(1200);
    await slow.stop({ drainMs: 5_000 });
    expect(finished, 'the run under way finished before stop() resolved').to.equal(1);

    let hung = false;
    const stuck = await started([{ name: 'stuck', schedule: '* * * * * *', run: () => new Promise<void>(() => (hung = true)) }]);
    await sleep(1200);
    expect(hung).to.equal(true);
    await stuck.stop({ drainMs: 100 });
  });

  it('runs a daily job once when its time comes, and not at the looks before or after it', async () => {
    let now = new Date('2026-11-29T02:59:58.000Z');
    let runs = 0;
    const background = await started([{ name: 'daily', schedule: '0 0 3 * * *', run: async () => void runs++ }], () => now);
    try {
      await sleep(350);
      expect(runs, 'before its time').to.equal(0);
      now = new Date('2026-11-29T03:00:00.500Z');
      await sleep(350);
      expect(runs, 'at its time').to.equal(1);
      now = new Date('2026-11-29T03:00:07.000Z');
      await sleep(350);
      expect(runs, 'later that day').to.equal(1);
      now = new Date('2026-11-30T03:00:00.200Z');
      await sleep(350);
      expect(runs, 'the next day').to.equal(2);
    } finally {
      await background.stop();
    }
    const recorded = await h.db('job_runs').where({ job: 'daily' }).orderBy('slot').pluck('slot');
    expect(recorded).to.deep.equal(['2026-11-29T03:00:00.000Z', '2026-11-30T03:00:00.000Z']);
  });
});
