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
});
