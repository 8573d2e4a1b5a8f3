import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { statementsDuring, testDatabaseKind } from '../helpers/databases.js';
import { finishRuns, saveDraftEvent, type RunFinish } from '../../src/tasks/queries.js';
import { runWrites, type RunEnd } from '../../src/runtime/run-writes.js';
import type { SessionAnswer } from '../../src/sessions/queries.js';
import type { NewAgentCall } from '../../src/agents/queries.js';
import { eventsOfRow } from '../../src/streams/queries.js';

/** Runs' ends recorded together (tasks/queries.ts, `finishRuns`): what each end writes, in a few statements for all. */
describe('runs ended in one batch (finishRuns)', () => {
  let h: Harness;
  let t: Tenant;
  /** The SQL of the statements the last `recording` saw. */
  let statements: string[] = [];
  /** Runs `run`, keeping the SQL of the statements it made the database run in `statements`. */
  async function recording<T>(run: () => Promise<T>): Promise<T> {
    const { value, statements: ran } = await statementsDuring(h.db, run);
    statements = ran.map((statement) => statement.sql);
    return value;
  }

  before(async () => {
    h = await createHarness({ options: { runOnNewWork: false, dispatchOnAccept: false } });
    t = await h.tenant({ slug: 'finisher' });
  });
  after(() => h.close());

  /** `n` tasks in progress under claims of their own, counted as runs in flight by their scribe. */
  async function claimedTasks(n: number): Promise<Array<{ id: string; token: string }>> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const res = await h.api
        .post('/api/v1/scribes/finisher/requests')
        .set(t.headers)
        .send({ task: { summary: `Task ${i}` } });
      ids.push(res.body.request.id);
    }
    await h.services.dispatcher.tick();
    const tasks: Array<{ id: string }> = await h.db('tasks').whereIn('request_id', ids).orderBy('created_at').select('id');
    const claimed = tasks.map((task) => ({ id: task.id, token: randomUUID() }));
    for (const { id, token } of claimed)
      await h.db('tasks').where({ id }).update({ status: 'in_progress', claim_token: token, lease_until: '2999-01-01T00:00:00.000Z', attempts: 1 });
    await h.db('scribes').where({ id: t.scribe.id }).update({ runs_in_flight: n });
    return claimed;
  }
  const streamOf = async (id: string) =>
    (await h.db('stream_events').where({ subject_id: id }).orderBy('seq').select('seq', 'kind', 'data')).map((e) => ({ seq: e.seq, kind: e.kind, data: JSON.parse(e.data) }));

  it('moves the tasks whose claims hold, with their events and streams, counts their runs as ended, and leaves one taken over alone', async () => {
    const [done, drafted, asked, failed, takenOver] = await claimedTasks(5);
    const at = '2026-12-01T10:00:00.000Z';
    expect(await saveDraftEvent(h.db, drafted!, 'Half of the ans', at)).to.equal(true);
    const draftRow = await h.db('task_events').where({ task_id: drafted!.id, partial: true }).first();
    const streamsBefore = new Map(await Promise.all([done, drafted, asked, failed].map(async (task) => [task!.id, (await streamOf(task!.id)).length] as const)));
    const end = (task: { id: string; token: string }, rest: Omit<RunFinish, 'id' | 'claimToken' | 'at'>): RunFinish => ({ id: task.id, claimToken: task.token, at, ...rest });
    const finishes: RunFinish[] = [
      end(done!, { to: 'done', author: 'scribe', text: 'All done.', result: 'All done.', lastError: null, noDraft: true }),
      end(drafted!, { to: 'done', author: 'scribe', text: 'Half of the answer, whole.', result: 'Half of the answer, whole.', lastError: null }),
      end(asked!, { to: 'waiting', author: 'scribe', text: 'Which year?', lastError: null, noDraft: true }),
      end(failed!, { to: 'waiting', author: 'system', text: 'The scribe could not finish this task.', lastError: 'boom', noDraft: true }),
      // Its claim was taken over: the run's end is not recorded.
      { ...end(takenOver!, { to: 'done', author: 'scribe', text: 'Late.', result: 'Late.', lastError: null, noDraft: true }), claimToken: randomUUID() },
    ];
    const alongside: string[][] = [];
    const finished = await recording(() => finishRuns(h.db, finishes, async (_trx, ended) => alongside.push(ended.map((f) => f.id))));

    expect(finished.map((f) => f.id)).to.deep.equal([done!.id, drafted!.id, asked!.id, failed!.id]);
    expect(alongside).to.deep.equal([finished.map((f) => f.id)]);
    const row = (id: string) => h.db('tasks').where({ id }).first('status', 'result', 'last_error', 'claim_token', 'lease_until', 'attempts', 'updated_at');
    const released = { claim_token: null, lease_until: null, attempts: 0, updated_at: at };
    expect(await row(done!.id)).to.deep.equal({ status: 'done', result: 'All done.', last_error: null, ...released });
    expect(await row(drafted!.id)).to.deep.equal({ status: 'done', result: 'Half of the answer, whole.', last_error: null, ...released });
    expect(await row(asked!.id)).to.deep.equal({ status: 'waiting', result: null, last_error: null, ...released });
    expect(await row(failed!.id)).to.deep.equal({ status: 'waiting', result: null, last_error: 'boom', ...released });
    expect(await row(takenOver!.id)).to.include({ status: 'in_progress', claim_token: takenOver!.token, attempts: 1, result: null });
    expect((await h.db('scribes').where({ id: t.scribe.id }).first()).runs_in_flight, 'four runs ended, one still in flight').to.equal(1);

    const lastEvent = async (id: string) => h.db('task_events').where({ task_id: id }).orderBy('id', 'desc').first('id', 'from_status', 'to_status', 'author', 'text', 'partial');
    const whole = (e: object) => ({ ...e, partial: testDatabaseKind === 'sqlite' ? 0 : false });
    const doneEvent = await lastEvent(done!.id);
    expect(doneEvent).to.deep.include(whole({ from_status: 'in_progress', to_status: 'done', author: 'scribe', text: 'All done.' }));
    // The result under way became the result: the same event, whole.
    expect(await lastEvent(drafted!.id)).to.deep.equal(
      whole({ id: draftRow.id, from_status: 'in_progress', to_status: 'done', author: 'scribe', text: 'Half of the answer, whole.' }),
    );
    expect(await h.db('task_events').where({ task_id: drafted!.id, partial: true }).first()).to.equal(undefined);
    const askedEvent = await lastEvent(asked!.id);
    expect(askedEvent).to.deep.include(whole({ to_status: 'waiting', author: 'scribe', text: 'Which year?' }));
    const failedEvent = await lastEvent(failed!.id);
    expect(failedEvent).to.deep.include(whole({ to_status: 'waiting', author: 'system', text: 'The scribe could not finish this task.' }));

    // Each end is one row of its task's stream, numbered after its last event by the events it
    // stands for: the answer (whole, or the rest of a draft), the status, the message; a system note's status only.
    const added = async (id: string) => (await streamOf(id)).slice(streamsBefore.get(id));
    const next = (id: string) => streamsBefore.get(id)! + 1;
    expect(await added(done!.id)).to.deep.equal([{ seq: next(done!.id) + 2, kind: 'status', data: { status: 'done', message_id: doneEvent.id, delta: true } }]);
    // The rest of an answer written as it came is a delta of its own, pruned with the draft's.
    expect(await added(drafted!.id)).to.deep.equal([
      { seq: next(drafted!.id), kind: 'delta', data: { message_id: draftRow.id, text: 'wer, whole.' } },
      { seq: next(drafted!.id) + 2, kind: 'status', data: { status: 'done', message_id: draftRow.id } },
    ]);
    expect(await added(asked!.id)).to.deep.equal([{ seq: next(asked!.id) + 2, kind: 'status', data: { status: 'waiting', message_id: askedEvent.id, delta: true } }]);
    expect(await added(failed!.id)).to.deep.equal([{ seq: next(failed!.id), kind: 'status', data: { status: 'waiting' } }]);
    expect(await streamOf(takenOver!.id), 'nothing streamed for the end not recorded').to.have.length(1);
    // As streams tell them.
    const told = async (id: string) => (await added(id)).flatMap((row) => eventsOfRow({ ...row, data: JSON.stringify(row.data) }));
    expect(await told(done!.id)).to.deep.equal([
      { seq: next(done!.id), kind: 'delta', messageId: doneEvent.id, whole: true },
      { seq: next(done!.id) + 1, kind: 'message', messageId: doneEvent.id },
      { seq: next(done!.id) + 2, kind: 'status', status: 'done' },
    ]);
    expect(await told(drafted!.id)).to.deep.equal([
      { seq: next(drafted!.id), kind: 'delta', messageId: draftRow.id, text: 'wer, whole.' },
      { seq: next(drafted!.id) + 1, kind: 'message', messageId: draftRow.id },
      { seq: next(drafted!.id) + 2, kind: 'status', status: 'done' },
    ]);
    expect(await told(failed!.id)).to.deep.equal([{ seq: next(failed!.id), kind: 'status', status: 'waiting' }]);

    // A few statements for the batch, not a few for each end.
    const of = (pattern: RegExp) => statements.filter((sql) => pattern.test(sql)).length;
    // Five ends: on SQLite an UPDATE of four and one of one (db/rows.ts, `piecesOf`).
    expect(of(/^update .tasks./i), 'tasks').to.equal(testDatabaseKind === 'sqlite' ? 2 : 1);
    expect(of(/^insert into .task_events./i), 'new events').to.equal(1);
    expect(of(/^update .task_events./i), 'the result under way completed').to.equal(1);
    // Five stream rows: on SQLite in INSERTs of four and one (db/rows.ts, `piecesOf`).
    expect(of(/insert into .?stream_events/i), 'stream events').to.equal(testDatabaseKind === 'sqlite' ? 2 : 1);
    expect(of(/^update .scribes./i), 'runs ended').to.equal(1);
  });

  it('writes a large batch in UPDATEs of at most 64 ends, and records nothing for a batch whose claims all lapsed', async () => {
    const claimed = await claimedTasks(70);
    const finishes = claimed.map((task) => ({
      id: task.id,
      claimToken: task.token,
      to: 'done' as const,
      author: 'scribe' as const,
      text: 'ok',
      result: 'ok',
      at: '2026-12-01T11:00:00.000Z',
      lastError: null,
      noDraft: true,
    }));
    const finished = await recording(() => finishRuns(h.db, finishes));
    expect(finished).to.have.length(70);
    expect(statements.filter((sql) => /^update .tasks./i.test(sql)).length, 'SQLite: 64, 4 and 2; PostgreSQL: 64 and 6').to.equal(testDatabaseKind === 'sqlite' ? 3 : 2);
    const ids = claimed.map((task) => task.id);
    expect(await h.db('tasks').whereIn('id', ids).where({ status: 'done', result: 'ok' }).count({ n: '*' }).first()).to.deep.equal({ n: 70 });
    expect((await h.db('scribes').where({ id: t.scribe.id }).first()).runs_in_flight).to.equal(0);

    const again = await finishRuns(h.db, finishes, async () => expect.fail('nothing was recorded'));
    expect(again).to.deep.equal([]);
  });

  it("writes runs' traced calls and their ends in one line (runWrites): a run's calls in its end's batch, ahead of it; a call that cannot be stored fails alone", async () => {
    const [first, second, third] = await claimedTasks(3);
    const at = '2026-12-01T12:00:00.000Z';
    const recorded: string[][] = [];
    const line = runWrites(
      (work) => work(h.db),
      async (_trx, events) => {
        recorded.push(events.map((event) => String(event.data.id)));
        return [];
      },
    );
    const call = (task: { id: string }, name: string, scribeId = t.scribe.id): NewAgentCall => ({
      organization_id: t.organizationId,
      scribe_id: scribeId,
      task_id: task.id,
      session_id: null,
      run_id: randomUUID(),
      position: 0,
      kind: 'model',
      name,
      arguments: null,
      result: null,
      duration_ms: 1000,
      error: null,
      input_tokens: null,
      output_tokens: null,
      created_at: at,
    });
    const end = (task: { id: string; token: string }): RunEnd => ({
      finish: { id: task.id, claimToken: task.token, to: 'done', author: 'scribe', text: 'Done.', result: 'Done.', at, lastError: null, noDraft: true },
      event: { organizationId: t.organizationId, type: 'task.done', data: { id: task.id } },
    });
    const errors: unknown[] = [];
    await recording(() =>
      Promise.all([
        // The first write goes at once, alone; the rest come while it is written and go together next.
        line.call(call(first!, 'first')),
        line.call(call(second!, 'second')),
        line.end(end(first!)),
        line.end(end(second!)),
      ]),
    );
    const calls = statements.filter((sql) => /^insert into .agent_calls./i.test(sql));
    const tasks = statements.filter((sql) => /^update .tasks./i.test(sql));
    expect([calls.length, tasks.length], 'the first call alone, then the second call and both ends in one batch').to.deep.equal([2, 1]);
    expect(statements.indexOf(calls[1]!), 'the batch writes its calls ahead of its ends').to.be.below(statements.indexOf(tasks[0]!));
    expect(
      statements.filter((sql) => /savepoint/i.test(sql)),
      'each batch is one transaction, with no savepoint within',
    ).to.deep.equal([]);
    expect(await h.db('agent_calls').whereIn('task_id', [first!.id, second!.id]).orderBy('name').pluck('name')).to.deep.equal(['first', 'second']);
    expect(await h.db('tasks').whereIn('id', [first!.id, second!.id]).pluck('status')).to.deep.equal(['done', 'done']);
    expect(recorded).to.deep.equal([[first!.id, second!.id]]);

    // A call of no scribe cannot be stored: its batch is written item by item, and only that call fails.
    const busy = line.call(call(first!, 'keeps the line busy')).catch((err) => errors.push(err));
    const lost = line.call(call(third!, 'of no scribe', '00000000-0000-4000-8000-000000000000')).catch((err) => errors.push(err));
    await Promise.all([busy, lost, line.end(end(third!))]);
    expect(errors).to.have.length(1);
    expect(String((errors[0] as Error).message)).to.match(/foreign key/i);
    expect(await h.db('tasks').where({ id: third!.id }).first('status')).to.deep.equal({ status: 'done' });
    expect(await h.db('agent_calls').where({ task_id: third!.id }).count({ n: '*' }).first()).to.deep.equal({ n: 0 });
  });

  it("writes sessions' answers in the line's batches: a statement per step for all, one alone where a newer message follows, none where the claim went", async () => {
    const at = '2026-12-01T13:00:00.000Z';
    const sessions: Array<{ id: string; token: string; asked: number }> = [];
    for (let i = 0; i < 6; i++) {
      const id = (await h.services.sessions.start(t.scribe, { message: `Question ${i}`, endImmediately: false })).id;
      const token = randomUUID();
      await h.db('sessions').where({ id }).update({ state: 'running', claim_token: token, lease_until: '2999-01-01T00:00:00.000Z', attempts: 1 });
      const asked = Number((await h.db('session_messages').where({ session_id: id }).first('id')).id);
      sessions.push({ id, token, asked });
    }
    const [first, second, failed, followed, ended, lost] = sessions;
    await h.db('session_messages').insert({ session_id: followed!.id, author: 'user', text: 'And one more thing.', created_at: at });
    // Uncapped: only work due again brings its turn forward.
    await h.db('scribes').where({ id: t.scribe.id }).update({ runs_in_flight: 6, max_concurrency: null, run_turn_at: null });
    const line = runWrites(
      (work) => work(h.db),
      async () => [],
    );
    const answer = (session: { id: string; token: string; asked: number }, text: string, more: Partial<SessionAnswer> = {}) =>
      line.answer({ claim: session, outcome: { author: 'scribe', text, end: false, errorMessage: null, answeredUpTo: session.asked, noDraft: true, ...more }, at });
    await recording(() =>
      Promise.all([
        // The first goes at once, alone; the rest come while it is written and go together next.
        answer(first!, 'First answer.'),
        answer(second!, 'Second answer.'),
        answer(failed!, 'The scribe could not answer: boom', { author: 'system', errorMessage: 'boom' }),
        answer(followed!, 'An answer to the first question.'),
        answer(ended!, 'Goodbye.', { end: true }),
        answer({ ...lost!, token: randomUUID() }, 'Not mine to give.'),
      ]),
    );
    const begins = statements.filter((sql) => /^(begin|BEGIN;)/.test(sql));
    const counts = statements.filter((sql) => /^update .scribes. set .runs_in_flight./i.test(sql));
    // Not SQLite's write that changes nothing (dialect.ts, writeFirst), which the one written alone makes first.
    const moves = statements.filter((sql) => /^update .sessions./i.test(sql) && !/ where 0$/.test(sql));
    expect([begins.length, counts.length], 'two batches, each one transaction that counts its runs once').to.deep.equal([2, 2]);
    // The scribes' rows are locked by that count alone, as the group's last statement, so batches never wait on each other for them.
    expect(
      statements.filter((sql) => /^update .scribes./i.test(sql)),
      'no other write to scribes, the turn of the followed one included',
    ).to.deep.equal(counts);
    statements.forEach((sql, i) => /^update .scribes./i.test(sql) && expect(statements[i + 1], 'the last statement before its commit').to.match(/^(commit|COMMIT;)/));
    expect(moves.length, "the first's, the followed one's alone, then the rest's together").to.equal(3);
    expect(
      statements.filter((sql) => /savepoint/i.test(sql)),
      'no savepoint within a batch',
    ).to.deep.equal([]);

    const state = async (id: string) => h.db('sessions').where({ id }).first('state', 'reply_due', 'claim_token', 'error_message', 'updated_at');
    const released = { claim_token: null, updated_at: at };
    expect(await state(first!.id)).to.deep.include({ state: 'waiting', error_message: null, ...released });
    expect(await state(second!.id)).to.deep.include({ state: 'waiting', error_message: null, ...released });
    expect(await state(failed!.id)).to.deep.include({ state: 'failed', error_message: 'boom', ...released });
    expect(await state(followed!.id), 'owed the next answer').to.deep.include({ state: 'queued', ...released });
    expect(Boolean((await state(followed!.id)).reply_due)).to.equal(true);
    expect(await state(ended!.id)).to.deep.include({ state: 'completed', ...released });
    expect(await state(lost!.id), 'its claim went elsewhere: nothing recorded').to.deep.include({ state: 'running', claim_token: lost!.token });
    const last = async (id: string) => (await h.db('session_messages').where({ session_id: id }).orderBy('id', 'desc').first('author', 'text')) as object;
    expect(await last(second!.id)).to.deep.equal({ author: 'scribe', text: 'Second answer.' });
    expect(await last(failed!.id)).to.deep.equal({ author: 'system', text: 'The scribe could not answer: boom' });
    expect(await last(lost!.id)).to.deep.equal({ author: 'user', text: 'Question 5' });
    const message = Number((await h.db('session_messages').where({ session_id: second!.id, author: 'scribe' }).first('id')).id);
    // One row: as streams tell it, the reply as one delta, the message, the state.
    const [row] = (await streamOf(second!.id)).slice(-1);
    expect(row).to.deep.include({ kind: 'status', data: { status: 'waiting', message_id: message, delta: true } });
    expect(eventsOfRow({ ...row!, data: JSON.stringify(row!.data) })).to.deep.equal([
      { seq: row!.seq - 2, kind: 'delta', messageId: message, whole: true },
      { seq: row!.seq - 1, kind: 'message', messageId: message },
      { seq: row!.seq, kind: 'status', status: 'waiting' },
    ]);
    expect((await streamOf(failed!.id)).at(-1)!.data, 'a system note is not streamed as a message').to.deep.equal({ status: 'failed' });
    const note = Number((await h.db('session_messages').where({ session_id: failed!.id, author: 'system' }).first('id')).id);
    expect((await streamOf(failed!.id)).filter((e) => e.data.message_id === note)).to.deep.equal([]);
    expect(
      await h.db('scribes').where({ id: t.scribe.id }).first('runs_in_flight', 'run_turn_at'),
      'five runs ended, the sixth still counted; the turn come for the work due again',
    ).to.deep.equal({
      runs_in_flight: 1,
      run_turn_at: at,
    });
  });
});
