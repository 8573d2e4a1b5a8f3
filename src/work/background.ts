import type { WakeupChannel, Wakeups } from '../db/wakeups.js';

/** Background work as a process runs it: a queue worker (engine.ts), or anything that claims, polls and stops the same way. */
export interface Runner {
  /** Where other processes say that work for it arrived. */
  channel?: WakeupChannel;
  /** Looks for due work anew and claims it into free slots. */
  fill(): void;
  nudge(): void;
  /** Stops the run of `id` if it runs here. */
  cancel?(id: string): void;
  stop(options?: { drainMs?: number }): Promise<void>;
}

/** How often each runner looks for due work when nothing woke it. */
export const POLL_MS = 1000;

export type Background = ReturnType<typeof createBackground>;

/**
 * A process's background work: its runners woken by NOTIFY (PostgreSQL; db/wakeups.ts)
 * and by a poll every `pollMs`, which covers a lost notification, SQLite (which has none),
 * work whose time comes (retries, schedules, jobs) and leases that ran out. One `stop`
 * stops them all.
 */
export function createBackground({ runners, wakeups, pollMs = POLL_MS }: { runners: readonly Runner[]; wakeups: Wakeups; pollMs?: number }) {
  let timer: NodeJS.Timeout | undefined;
  const cancel = (id: string) => runners.forEach((runner) => runner.cancel?.(id));
  return {
    /** Starts polling and listening; work left behind by an earlier run is taken up at once. */
    async start(): Promise<void> {
      timer = setInterval(() => runners.forEach((runner) => runner.fill()), pollMs);
      const handlers: Partial<Record<WakeupChannel, (id: string) => void>> = { scribe_cancel: cancel };
      for (const runner of runners) if (runner.channel) handlers[runner.channel] = () => runner.nudge();
      await wakeups.listen(handlers);
      for (const runner of runners) runner.nudge();
    },
    /** Stops claiming at once, lets running work finish for up to `drainMs`, hands back the rest, and waits. */
    async stop({ drainMs = 0 }: { drainMs?: number } = {}): Promise<void> {
      clearInterval(timer);
      await Promise.all(runners.map((runner) => runner.stop({ drainMs })));
    },
  };
}
