import { expect } from 'chai';
import { batchedWrites, batchPerKey, sharedLookup } from '../../src/lib/batch-per-key.js';

/** A batch runner whose batches end when the test says so. */
function controlled() {
  const batches: Array<{ key: string; items: number[] }> = [];
  const pending: Array<() => void> = [];
  const add = batchPerKey<number, string>((key, items) => {
    batches.push({ key, items });
    const n = batches.length;
    return new Promise((resolve) => pending.push(() => resolve(items.map((item) => `${key}${item}@batch${n}`))));
  });
  const endNext = async () => {
    pending.shift()!();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { add, batches, endNext };
}

describe('batchPerKey() (lib/batch-per-key.ts)', () => {
  it('runs a call alone at once when its key has nothing under way', async () => {
    const { add, batches, endNext } = controlled();
    const answer = add('a', 1);
    expect(batches).to.deep.equal([{ key: 'a', items: [1] }]);
    await endNext();
    expect(await answer).to.equal('a1@batch1');
  });

  it('puts the calls that arrive while a batch runs into the next batch, started once it ends, each answered in order', async () => {
    const { add, batches, endNext } = controlled();
    const first = add('a', 1);
    const later = [add('a', 2), add('a', 3), add('a', 4)];
    expect(batches, 'nothing more starts while the first runs').to.have.length(1);
    await endNext();
    expect(await first).to.equal('a1@batch1');
    expect(batches[1]).to.deep.equal({ key: 'a', items: [2, 3, 4] });
    await endNext();
    expect(await Promise.all(later)).to.deep.equal(['a2@batch2', 'a3@batch2', 'a4@batch2']);
  });

  it('never answers a call from a batch that started before the call arrived', async () => {
    const { add, batches, endNext } = controlled();
    void add('a', 1);
    const arrivedDuringBatch1 = add('a', 2);
    await endNext();
    const arrivedDuringBatch2 = add('a', 3);
    await endNext();
    expect(await arrivedDuringBatch1).to.equal('a2@batch2');
    await endNext();
    expect(await arrivedDuringBatch2).to.equal('a3@batch3');
    expect(batches.map((b) => b.items)).to.deep.equal([[1], [2], [3]]);
  });

  it('runs each key on its own', async () => {
    const { add, batches, endNext } = controlled();
    const answers = [add('a', 1), add('b', 1)];
    expect(batches.map((b) => b.key)).to.deep.equal(['a', 'b']);
    await endNext();
    await endNext();
    expect(await Promise.all(answers)).to.deep.equal(['a1@batch1', 'b1@batch2']);
  });

  it('fails every call of a failed batch, and runs the calls after it afresh', async () => {
    let runs = 0;
    const add = batchPerKey<number, number>(async (_key, items) => {
      runs += 1;
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (runs === 1) throw new Error('connection lost');
      return items;
    });
    const first = add('a', 1);
    const failedWithIt = await Promise.allSettled([first]);
    expect(failedWithIt[0]).to.deep.include({ status: 'rejected' });
    expect(await Promise.all([add('a', 2), add('a', 3)])).to.deep.equal([2, 3]);
    expect(runs, 'the failed batch, then 2 alone, then 3').to.equal(3);
  });
  it('runs up to `lines` batches of a key at once: the next batch starts as any of them ends', async () => {
    const batches: string[][] = [];
    let underWay = 0;
    let most = 0;
    const release: Array<() => void> = [];
    const add = batchPerKey<string, string>(
      async (_key, items) => {
        batches.push(items);
        underWay += 1;
        most = Math.max(most, underWay);
        await new Promise<void>((resolve) => release.push(resolve));
        underWay -= 1;
        return items.map((item) => `${item}@${batches.indexOf(items) + 1}`);
      },
      { most: 2, lines: 2 },
    );
    const answers = ['a', 'b', 'c', 'd', 'e', 'f'].map((item) => add('k', item));
    expect(batches, 'the first two calls at once, each alone; the rest wait for a line').to.deep.equal([['a'], ['b']]);
    release.shift()!();
    expect(await answers[0]).to.equal('a@1');
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches, 'a line came free: the next two waiting').to.deep.equal([['a'], ['b'], ['c', 'd']]);
    release.shift()!();
    expect(await answers[1]).to.equal('b@2');
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches.at(-1)).to.deep.equal(['e', 'f']);
    while (release.length > 0) release.shift()!();
    expect(await Promise.all(answers)).to.deep.equal(['a@1', 'b@2', 'c@3', 'd@3', 'e@4', 'f@4']);
    expect(most, 'never more than two batches under way').to.equal(2);
  });
  it('with gapMs, starts a batch that is not full no sooner than that after the last began; a full one, or a lone call after a quiet spell, at once', async () => {
    const batches: Array<{ items: string[]; at: number }> = [];
    const t0 = performance.now();
    const add = batchPerKey<string, string>(
      async (_key, items) => {
        batches.push({ items, at: performance.now() - t0 });
        return items;
      },
      { most: 3, lines: 4, gapMs: () => 60 },
    );
    await add('k', 'a');
    // Lines are free, but the last batch began less than 60 ms ago: b and c wait for the gap, together.
    const bc = [add('k', 'b'), add('k', 'c')];
    expect(batches.length, 'b and c wait').to.equal(1);
    await Promise.all(bc);
    // Three calls fill a batch: it goes at once (within the call that fills it), gap or not.
    const def = [add('k', 'd'), add('k', 'e'), add('k', 'f')];
    expect(batches.length, 'a full batch did not wait').to.equal(3);
    await Promise.all(def);
    await new Promise((resolve) => setTimeout(resolve, 80));
    const g = add('k', 'g');
    expect(batches.length, 'after a quiet spell, at once').to.equal(4);
    await g;
    expect(batches.map((batch) => batch.items)).to.deep.equal([['a'], ['b', 'c'], ['d', 'e', 'f'], ['g']]);
    // Timers never fire early, so this holds on a loaded machine too.
    expect(batches[1]!.at - batches[0]!.at, 'b and c waited for the gap').to.be.at.least(59);
  });
});

describe('sharedLookup() (lib/batch-per-key.ts)', () => {
  it('gives the calls of one batch one load and the same frozen answer', async () => {
    let loads = 0;
    const lookup = sharedLookup(
      (org: string, slug: string) => `${org}/${slug}`,
      async (org: string, slug: string) => {
        loads += 1;
        await new Promise((resolve) => setTimeout(resolve, 5));
        return { org, slug, load: loads };
      },
    );
    const first = lookup('o', 's');
    const batch = [lookup('o', 's'), lookup('o', 's'), lookup('o', 's')];
    expect(await first).to.deep.equal({ org: 'o', slug: 's', load: 1 });
    const answers = await Promise.all(batch);
    expect(loads).to.equal(2);
    expect(answers[0]).to.deep.equal({ org: 'o', slug: 's', load: 2 });
    expect(answers[1]).to.equal(answers[0]);
    expect(Object.isFrozen(answers[0])).to.equal(true);
    expect(() => {
      (answers[0] as { slug: string }).slug = 'changed';
    }).to.throw(TypeError);
  });

  it('answers undefined (no such row) to every call of the batch', async () => {
    const lookup = sharedLookup(
      (id: string) => id,
      async () => undefined,
    );
    expect(await Promise.all([lookup('x'), lookup('x')])).to.deep.equal([undefined, undefined]);
  });
});

describe('batchedWrites() (lib/batch-per-key.ts)', () => {
  /** A writer that records each batch it is given, and fails any batch holding a `bad` item. */
  function writer(options?: { most: number }) {
    const written: string[][] = [];
    const tried: string[][] = [];
    const write = batchedWrites(async (items: readonly string[]) => {
      tried.push([...items]);
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (items.some((item) => item.startsWith('bad'))) throw new Error(`cannot write ${items.join(', ')}`);
      written.push([...items]);
    }, options);
    return { write, written, tried };
  }

  it('writes a call alone at once, and the calls that come meanwhile together next', async () => {
    const { write, written } = writer();
    const first = write('a');
    const later = ['b', 'c', 'd'].map(write);
    await first;
    await Promise.all(later);
    expect(written).to.deep.equal([['a'], ['b', 'c', 'd']]);
  });

  it('writes each item of a failed batch alone: only the item that cannot be written fails its call', async () => {
    const { write, written, tried } = writer();
    const first = write('a');
    const later = ['b', 'bad-c', 'd'].map((item) => write(item));
    await first;
    const outcomes = await Promise.allSettled(later);
    expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    expect((outcomes[1] as PromiseRejectedResult).reason).to.have.property('message', 'cannot write bad-c');
    expect(tried).to.deep.equal([['a'], ['b', 'bad-c', 'd'], ['b'], ['bad-c'], ['d']]);
    expect(written).to.deep.equal([['a'], ['b'], ['d']]);
  });

  it('writes at most `most` calls a batch, and answers each batch as it is written, before the next', async () => {
    const { write, written } = writer({ most: 2 });
    const first = write('a');
    const answered: Array<[string, number]> = [];
    const later = ['b', 'c', 'd', 'e', 'f'].map((item) => write(item).then(() => answered.push([item, written.length])));
    await first;
    await Promise.all(later);
    expect(written).to.deep.equal([['a'], ['b', 'c'], ['d', 'e'], ['f']]);
    // Each call was answered once its own batch was written, while later batches were still to come.
    expect(answered).to.deep.equal([
      ['b', 2],
      ['c', 2],
      ['d', 3],
      ['e', 3],
      ['f', 4],
    ]);
  });

  it('fails a call written alone that fails, once, and goes on with the next', async () => {
    const { write, written, tried } = writer();
    const failed = await Promise.allSettled([write('bad-a')]);
    expect(failed[0]).to.deep.include({ status: 'rejected' });
    await write('b');
    expect(tried).to.deep.equal([['bad-a'], ['b']]);
    expect(written).to.deep.equal([['b']]);
  });
});
