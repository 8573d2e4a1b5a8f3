/**
 * Resolves once every promise has settled, or `ms` have passed, whichever is first: how a
 * stopping process gives work under way a bounded time to finish.
 */
export async function settledWithin(promises: Iterable<Promise<unknown>>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([Promise.allSettled(promises), new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
