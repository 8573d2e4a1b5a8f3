interface Call<I, R> {
  item: I;
  resolve: (result: R) => void;
  reject: (err: unknown) => void;
}

/**
 * Batches per key: the calls for a key that arrive while its batch runs form the next batch
 * (`most` of them at a time), which starts when that one has ended; with `lines`, up to that
 * many batches of a key are under way at once, and the next starts as any of them ends. With
 * `gapMs`, a batch starts no sooner than that after the key's last one began, unless `most`
 * calls wait: calls that come one by one still go in batches (a lone call, after a quiet
 * spell, goes at once). `run` answers a batch's items in order. Each call is answered by a
 * batch that started after the call arrived, so it never reads older state than a query of
 * its own would have (a key revoked before the call arrived is seen revoked), while many
 * calls with one key at once cost a round trip per batch rather than one each.
 */
export function batchPerKey<I, R>(
  run: (key: string, items: I[]) => Promise<R[]>,
  { most = Infinity, lines = 1, gapMs = () => 0 }: { most?: number; lines?: number; gapMs?: () => number } = {},
): (key: string, item: I) => Promise<R> {
  type State = { waiting: Array<Call<I, R>>; underWay: number; lastStart: number; timer?: NodeJS.Timeout };
  const keys = new Map<string, State>();

  async function runBatch(batch: Array<Call<I, R>>, key: string): Promise<void> {
    try {
      const results = await run(
        key,
        batch.map((call) => call.item),
      );
      batch.forEach((call, i) => call.resolve(results[i]!));
    } catch (err) {
      for (const call of batch) call.reject(err);
    }
  }

  function startBatches(key: string, state: State): void {
    while (state.underWay < lines && state.waiting.length > 0) {
      const wait = state.lastStart + gapMs() - performance.now();
      if (wait > 0 && state.waiting.length < most) {
        state.timer ??= setTimeout(() => {
          state.timer = undefined;
          startBatches(key, state);
        }, wait);
        return;
      }
      clearTimeout(state.timer);
      state.timer = undefined;
      state.lastStart = performance.now();
      // The calls beyond these, and those that arrive meanwhile, wait for the next batch.
      const batch = state.waiting.splice(0, most);
      state.underWay++;
      void runBatch(batch, key).then(() => {
        state.underWay--;
        startBatches(key, state);
      });
    }
    // Kept while its last batch's gap runs, so that a call within it waits for the gap.
    if (state.underWay === 0 && state.waiting.length === 0 && performance.now() - state.lastStart >= gapMs()) keys.delete(key);
  }

  return (key, item) =>
    new Promise<R>((resolve, reject) => {
      const state = keys.get(key) ?? { waiting: [], underWay: 0, lastStart: -Infinity };
      keys.set(key, state);
      state.waiting.push({ item, resolve, reject });
      startBatches(key, state);
    });
}

/**
 * A read that calls with the same key share, batch by batch (`batchPerKey`): for the
 * lookups every API call makes (its key, its scribe). The shared answer is frozen, so no
 * caller can change what the others read.
 */
export function sharedLookup<A extends unknown[], V>(keyOf: (...args: A) => string, load: (...args: A) => Promise<V>): (...args: A) => Promise<V> {
  const batched = batchPerKey<A, V>(async (_key, calls) => {
    const value = await load(...calls[0]!);
    if (value !== null && typeof value === 'object') Object.freeze(value);
    return calls.map(() => value);
  });
  return (...args) => batched(keyOf(...args), args);
}

/**
 * Writes that calls share, batch by batch (`batchPerKey`, one key, with its `most`, `lines`
 * and `gapMs`): the first call is written at once, and the calls that come while a batch is
 * written go in the next, `most` at a time (each batch answers its calls as it commits, so
 * they need not wait for the rest). When a batch of several fails, each of its items is
 * written alone, so an item that cannot be written fails its own call only.
 */
export function batchedWrites<I>(
  write: (items: readonly I[]) => Promise<unknown>,
  options: { most?: number; lines?: number; gapMs?: () => number } = {},
): (item: I) => Promise<void> {
  type Outcome = { ok: true } | { ok: false; err: unknown };
  const alone = (item: I): Promise<Outcome> =>
    write([item]).then(
      () => ({ ok: true }),
      (err: unknown) => ({ ok: false, err }),
    );
  const batched = batchPerKey<I, Outcome>(async (_key, items) => {
    if (items.length === 1) return [await alone(items[0]!)];
    try {
      await write(items);
      return items.map(() => ({ ok: true }));
    } catch {
      return Promise.all(items.map(alone));
    }
  }, options);
  return async (item) => {
    const outcome = await batched('', item);
    if (!outcome.ok) throw outcome.err;
  };
}
