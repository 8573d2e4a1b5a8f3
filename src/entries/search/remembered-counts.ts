/**
 * Counts kept for a while per process, for choosing search plans. A plan chosen from a
 * minute-old count is as correct as one chosen from a fresh count (only its speed may
 * differ), and counting costs a query per search, a noticeable share of the search itself.
 */
export class RememberedCounts {
  private readonly counts = new Map<string, { count: number; at: number }>();

  constructor(private readonly options: { ttlMs: number; maxEntries: number; now?: () => number }) {}

  /** The count remembered under `key` if it is younger than the TTL; otherwise counts again. */
  async get(key: string, count: () => Promise<number>): Promise<number> {
    const now = (this.options.now ?? Date.now)();
    const known = this.counts.get(key);
    if (known && now - known.at < this.options.ttlMs) return known.count;
    const fresh = await count();
    // Clearing at the cap is crude but bounded; the counts are cheap to make again.
    if (this.counts.size >= this.options.maxEntries) this.counts.clear();
    this.counts.set(key, { count: fresh, at: now });
    return fresh;
  }
}
