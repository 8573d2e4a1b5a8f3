import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createHarness, testClock, type Harness } from '../helpers/harness.js';
import { appendStreamEvents, eventsOfRow, moveEvents, readStreamEvents, type StreamEventData } from '../../src/streams/queries.js';

describe('pruning event-stream deltas (maintenance, streams/queries.ts)', function () {
  this.timeout(20_000);
  let h: Harness;
  const clock = testClock('2026-11-21T09:00:00.000Z');
  before(async () => {
    h = await createHarness({ options: { runOnNewWork: false, dispatchOnAccept: false, clock } });
  });
  after(() => h.close());

  const append = (subjectId: string, events: StreamEventData[], at: string) => h.db.transaction((trx) => appendStreamEvents(trx, subjectId, events, at));

  it('deletes the deltas of a day ago and more, and keeps every status and message event and the newer deltas', async () => {
    const [old, recent] = [randomUUID(), randomUUID()];
    const story: StreamEventData[] = [
      { kind: 'status', data: { status: 'in_progress' } },
      { kind: 'delta', data: { message_id: 7, text: 'Hel' } },
      { kind: 'delta', data: { message_id: 7, text: 'lo' } },
      { kind: 'message', data: { message_id: 7 } },
      { kind: 'status', data: { status: 'done' } },
    ];
    await append(old, story, '2026-11-20T08:59:59.999Z');
    await append(recent, story, '2026-11-20T09:00:00.000Z');

    expect(await h.services.maintenance.pruneStreamDeltas()).to.equal(2);

    const kinds = async (id: string) => (await readStreamEvents(h.db, id, 0, 100)).map((event) => `${event.seq} ${event.kind}`);
    expect(await kinds(old)).to.deep.equal(['1 status', '4 message', '5 status']);
    expect(await kinds(recent)).to.deep.equal(['1 status', '2 delta', '3 delta', '4 message', '5 status']);
    expect(await h.services.maintenance.pruneStreamDeltas(), 'nothing left to prune').to.equal(0);
  });

  it("keeps an answer that came whole told as one delta: it is its end's status row, and the answer is stored once", async () => {
    const whole = randomUUID();
    await append(whole, [{ kind: 'status', data: { status: 'in_progress' } }, ...moveEvents('done', { id: 9, text: 'Hello', drafted: '' })], '2026-11-19T09:00:00.000Z');
    expect(await h.services.maintenance.pruneStreamDeltas()).to.equal(0);
    const told = (await readStreamEvents(h.db, whole, 0, 100)).flatMap((row) => eventsOfRow(row));
    expect(told).to.deep.equal([
      { seq: 1, kind: 'status', status: 'in_progress' },
      { seq: 2, kind: 'delta', messageId: 9, whole: true },
      { seq: 3, kind: 'message', messageId: 9 },
      { seq: 4, kind: 'status', status: 'done' },
    ]);
  });
});
