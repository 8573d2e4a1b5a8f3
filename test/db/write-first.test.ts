import { expect } from 'chai';
import { onlyOn } from '../helpers/databases.js';
import { createHarness, staffOf, type Harness, type Tenant } from '../helpers/harness.js';

/**
 * On SQLite a transaction that reads before its first write fails that write at once (busy,
 * whatever the busy timeout) when another process committed in between; so a transaction that
 * reads and then writes takes the write lock first (dialect.ts, writeFirst).
 */
onlyOn('sqlite')('transactions that read, then write, on SQLite', () => {
  let h: Harness;
  let t: Tenant;
  before(async () => {
    h = await createHarness({ env: { WEBHOOKS_ALLOW_PRIVATE: 'true' }, options: { runOnNewWork: false, dispatchOnAccept: false } });
    t = await h.tenant();
  });
  after(() => h.close());

  /** The statements of each transaction `work` runs, in order, without BEGIN and COMMIT. */
  async function transactionsOf(work: () => Promise<unknown>): Promise<string[][]> {
    const byTransaction = new Map<string, string[]>();
    const record = (query: { sql: string; __knexTxId?: string }) => {
      if (!query.__knexTxId || /^(begin|commit|rollback|savepoint|release)/i.test(query.sql)) return;
      byTransaction.set(query.__knexTxId, [...(byTransaction.get(query.__knexTxId) ?? []), query.sql]);
    };
    h.db.on('query', record);
    try {
      await work();
    } finally {
      h.db.off('query', record);
    }
    return [...byTransaction.values()];
  }

  it('takes the write lock first in the work of a receipt, a task and a chat, end to end', async () => {
    const transactions = await transactionsOf(async () => {
      await h.api
        .post(`/api/v1/scribes/${t.scribe.slug}/requests`)
        .set(t.headers)
        .send({ task: { summary: 'Sum up the week' } })
        .expect(202);
      await h.api.post(`/api/v1/scribes/${t.scribe.slug}/chat`).set(t.headers).send({ message: 'Hello' }).expect(202);
      await h.services.dispatcher.tick();
      await h.services.runtime.tick();
      await h.services.webhookWorker.tick();
    });
    expect(transactions.length).to.be.greaterThan(3);
    for (const statements of transactions) expect(statements[0], statements.join(' | ')).to.match(/^(update|insert|delete) /i);
  });

  it('takes the write lock first in the webhook worker claim and in a test event', async () => {
    const { endpoint } = await h.services.webhooks.create(staffOf(t), { url: 'http://127.0.0.1:9/hook' });
    const test = await transactionsOf(() => h.services.webhooks.sendTest(staffOf(t), endpoint.id));
    const claim = await transactionsOf(() => h.services.webhookWorker.tick());
    for (const [what, transactions] of [
      ['test event', test],
      ['claim', claim],
    ] as const) {
      expect(transactions.length, what).to.be.greaterThan(0);
      for (const statements of transactions) expect(statements[0], `${what}: ${statements.join(' | ')}`).to.match(/^(update|insert|delete) /i);
    }
  });
});
