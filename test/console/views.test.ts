import { expect } from 'chai';
import ejs from 'ejs';
import { signIn } from '../helpers/console.js';
import { createHarness, type Harness } from '../helpers/harness.js';

describe('console templates', () => {
  const read: string[] = [];
  let loader: typeof ejs.fileLoader;
  before(() => {
    loader = ejs.fileLoader;
    ejs.fileLoader = (file) => {
      read.push(file);
      return loader(file);
    };
  });
  after(() => {
    ejs.fileLoader = loader;
  });

  async function readsPerRender(env: Record<string, string>): Promise<[number, number]> {
    const h: Harness = await createHarness({ env, options: { runOnNewWork: false, dispatchOnAccept: false } });
    try {
      const admin = await signIn(h, await h.tenant());
      const counts: number[] = [];
      for (let i = 0; i < 2; i++) {
        read.length = 0;
        const page = await admin.get('/b/atlas');
        expect(page.status).to.equal(200);
        counts.push(read.length);
      }
      return counts as [number, number];
    } finally {
      await h.close();
    }
  }

  it('are read and compiled once per process, not at every render', async () => {
    // The harness's first page may find templates cached by an earlier harness in this process.
    const [, second] = await readsPerRender({});
    expect(second).to.equal(0);
  });

  it('are read again at every render under NODE_ENV=development, so edited views show at once', async () => {
    const [first, second] = await readsPerRender({ NODE_ENV: 'development' });
    expect(first).to.be.greaterThan(3);
    expect(second).to.equal(first);
  });
});
