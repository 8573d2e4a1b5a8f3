interface Call<I, R> {
  item: I;
  resolve: (result: R) => void;
  reject: (err: unknown) => void;
}

/**
 * At most one batch per key under way: the calls for a key that arrive while its batch runs
 * form the next batch (`most` of them at a time), which starts when that one has ended.
 * `run` answers a batch's items in order. Each call is answered by a batch that started
 * after the call arrived, so it never reads older state than a query of its own would have
 * (a key revoked before the call arrived is seen revoked), while many calls with one key at
 * once cost a round trip per batch rather than one each.
 */
export function batchPerKey<I, R>(
  run: (key: string, items: I[]) => Promise<R[]>,
  { most = Infinity, lines = 1 }: { most?: number; lines?: number } = {},
): (key: string, item: I) => Promise<R> {
  const keys = new Map<string, { waiting: Array<Call<I, R>>; underWay: number }>();

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

  function startBatches(key: string): void {
    const state = keys.get(key)!;
    while (state.underWay < lines && state.waiting.length > 0) {
      // The calls beyond these, and those that arrive meanwhile, wait for the next batch.
      const batch = state.waiting.splice(0, most);
      state.underWay++;
      void runBatch(batch, key).then(() => {
        state.underWay--;
        if (state.waiting.length > 0) startBatches(key);
        else if (state.underWay === 0) keys.delete(key);
      });
    }
  }

  return (key, item) =>
    new Promise<R>((resolve, reject) => {
      const state = keys.get(key) ?? { waiting: [], underWay: 0 };
      keys.set(key, state);
      state.waiting.push({ item, resolve, reject });
      startBatches(key);
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
 * Writes that calls share, batch by batch (`batchPerKey`, one key): the first call is written
 * at once, and the calls that come while a batch is written go in the next, `most` at a time
 * (each batch answers its calls as it commits, so they need not wait for the rest). When a
 * batch of several fails, each of its items is written alone, so an item that cannot be
 * written fails its own call only.
 */
export function batchedWrites<I>(write: (items: readonly I[]) => Promise<unknown>, { most, lines }: { most?: number; lines?: number } = {}): (item: I) => Promise<void> {
  type Outcome = { ok: true } | { ok: false; err: unknown };
  const alone = (item: I): Promise<Outcome> =>
    write([item]).then(
      () => ({ ok: true }),
      (err: unknown) => ({ ok: false, err }),
    );
  const batched = batchPerKey<I, Outcome>(
    async (_key, items) => {
      if (items.length === 1) return [await alone(items[0]!)];
      try {
        await write(items);
        return items.map(() => ({ ok: true }));
      } catch {
        return Promise.all(items.map(alone));
      }
    },
    { most, lines },
  );
  return async (item) => {
    const outcome = await batched('', item);
    if (!outcome.ok) throw outcome.err;
  };
}
