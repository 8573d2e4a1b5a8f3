import { expect } from 'chai';
import { createScheduler } from '../../src/jobs/scheduler.js';
import { createLogger } from '../../src/logger.js';

describe('the job scheduler', () => {
  it('runs a job every second until stopped, and survives a job that throws', async () => {
    let runs = 0;
    const scheduler = createScheduler(
      [
        {
          name: 'counting',
          schedule: '* * * * * *',
          run: async () => {
            runs++;
            throw new Error('a job that fails must not stop the schedule');
          },
        },
      ],
      createLogger('silent'),
    );
    scheduler.start();
    await new Promise((resolve) => setTimeout(resolve, 2300));
    await scheduler.stop();
    expect(runs).to.be.within(2, 3);
    const stoppedAt = runs;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(runs, 'no run after stop').to.equal(stoppedAt);
  });

  it('waits on stop for a run under way (node-cron\'s destroy alone does not), up to the time it is given', async () => {
    let finished = 0;
    const scheduler = createScheduler(
      // Longer than the second it starts in: a run is surely under way 1.2 s after start.
      [{ name: 'slow', schedule: '* * * * * *', run: () => new Promise<void>((resolve) => setTimeout(() => resolve(void finished++), 1_500)) }],
      createLogger('silent'),
    );
    scheduler.start();
    await new Promise((resolve) => setTimeout(resolve, 1200));
    await scheduler.stop(5_000);
    expect(finished, 'the run under way finished before stop() resolved').to.equal(1);

    let hung = false;
    const stuck = createScheduler([{ name: 'stuck', schedule: '* * * * * *', run: () => new Promise<void>(() => (hung = true)) }], createLogger('silent'));
    stuck.start();
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(hung).to.equal(true);
    await stuck.stop(100);
  });
});
