import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createHarness, eventually, type Harness } from '../helpers/harness.js';
import { testDatabaseKind } from '../helpers/databases.js';
import { createLogger } from '../../src/logger.js';
import { createStreamFeed, type StreamFeed } from '../../src/streams/feed.js';
import { appendStreamEvents } from '../../src/streams/queries.js';

describe(`the stream feed: watchers woken by new events, on ${testDatabaseKind === 'postgres' ? 'PostgreSQL, by the notification of the statement that wrote them' : 'SQLite, by its poll'} (streams/feed.ts)`, function () {
  this.timeout(20_000);
  let h: Harness;
  let feed: StreamFeed;

  before(async () => {
    h = await createHarness({ options: { runOnNewWork: false, dispatchOnAccept: false } });
    // No sweep within the test: only the notification (or SQLite's poll) can wake a watcher.
    feed = createStreamFeed({ db: h.db, url: h.config.databaseUrl, logger: createLogger('silent'), options: { pollMs: 20, sweepMs: 600_000, keepAliveMs: 600_000 } });
  });
  after(async () => {
    await feed.close();
    await h.close();
  });

  const append = (subjectId: string, texts: string[]) =>
    h.db.transaction((trx) =>
      appendStreamEvents(
        trx,
        subjectId,
        texts.map((text) => ({ kind: 'delta', data: { message_id: 1, text } })),
        new Date().toISOString(),
      ),
    );

  it('wakes the watchers of the task or session that got events, and no other', async () => {
    const [ready, written, untouched] = [randomUUID(), randomUUID(), randomUUID()];
    const woken = new Set<string>();
    for (const id of [ready, written, untouched]) feed.watch(id, () => woken.add(id));
    // The feed starts listening (or polling) at its first watcher: events from then on wake.
    await eventually(async () => {
      await append(ready, ['hello']);
      await new Promise((resolve) => setTimeout(resolve, 100));
      return woken.has(ready) ? true : undefined;
    }, 5000);
    await append(written, ['one', 'two']);
    await eventually(async () => (woken.has(written) ? true : undefined), 2000);
    expect([...woken].sort()).to.deep.equal([ready, written].sort());
    const rows = await h.db('stream_events').where({ subject_id: written }).orderBy('seq').select('seq', 'kind', 'data');
    expect(rows).to.deep.equal([
      { seq: 1, kind: 'delta', data: JSON.stringify({ message_id: 1, text: 'one' }) },
      { seq: 2, kind: 'delta', data: JSON.stringify({ message_id: 1, text: 'two' }) },
    ]);
  });
});
