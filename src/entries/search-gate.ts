/**
 * At most `perOrganization` searches of one organization run at once; its others wait their
 * turn, in order. With fewer such slots than read threads, one tenant's searches, however
 * slow, always leave a thread to every other tenant's.
 */
export class SearchGate {
  private readonly running = new Map<string, number>();
  private readonly waiting = new Map<string, Array<() => void>>();

  constructor(private readonly perOrganization: number) {}

  /** Runs `work` once the organization has a free slot; rejects with the signal's reason if it aborts first. */
  async run<T>(organizationId: string, signal: AbortSignal, work: () => Promise<T>): Promise<T> {
    await this.enter(organizationId, signal);
    try {
      return await work();
    } finally {
      this.leave(organizationId);
    }
  }

  /** Searches of the organization running now, and waiting. */
  load(organizationId: string): { running: number; waiting: number } {
    return { running: this.running.get(organizationId) ?? 0, waiting: this.waiting.get(organizationId)?.length ?? 0 };
  }

  private enter(organizationId: string, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    const running = this.running.get(organizationId) ?? 0;
    if (running < this.perOrganization) {
      this.running.set(organizationId, running + 1);
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(organizationId) ?? [];
      this.waiting.set(organizationId, queue);
      const turn = () => {
        signal.removeEventListener('abort', giveUp);
        resolve();
      };
      const giveUp = () => {
        queue.splice(queue.indexOf(turn), 1);
        if (queue.length === 0) this.waiting.delete(organizationId);
        reject(signal.reason);
      };
      signal.addEventListener('abort', giveUp, { once: true });
      queue.push(turn);
    });
  }

  private leave(organizationId: string): void {
    const queue = this.waiting.get(organizationId);
    const next = queue?.shift();
    if (next) {
      // The slot passes to the next in line: the running count stays.
      if (queue!.length === 0) this.waiting.delete(organizationId);
      next();
      return;
    }
    const running = this.running.get(organizationId)! - 1;
    if (running === 0) this.running.delete(organizationId);
    else this.running.set(organizationId, running);
  }
}
