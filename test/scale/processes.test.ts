import { expect } from 'chai';
import { startFakeOpenAi } from '../helpers/fake-openai.js';
import { stored } from '../helpers/databases.js';
import { eventually, tempDir } from '../helpers/harness.js';
import { startProcess, startWorkerProcess, type ServerProcess } from '../helpers/process.js';
import { provision } from '../helpers/provision.js';
import type { Db } from '../../src/db/knex.js';

/** Calls `send(i)` for i in [0, n), at most `parallel` at a time; what each answered, or the error. */
async function spread<T>(n: number, parallel: number, send: (i: number) => Promise<T>): Promise<Array<T | Error>> {
  const results: Array<T | Error> = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < n) {
        const i = next++;
        results[i] = await send(i).catch((err: Error) => err);
      }
    }),
  );
  return results;
}

/** Every receipt fulfilled by exactly one task, and every session answered exactly once: counted per item. */
async function expectEachDoneOnce(db: Db): Promise<{ receipts: number; sessions: number }> {
  const receipts = await db('requests as r')
    .leftJoin('tasks as t', 't.request_id', 'r.id')
    .groupBy('r.id', 'r.status', 'r.entity_id')
    .select('r.id', 'r.status', 'r.entity_id', db.raw('count(t.id) as tasks'), db.raw('min(cast(t.id as text)) as task_id'));
  const notOnce = receipts.filter((r) => r.status !== 'fulfilled' || Number(r.tasks) !== 1 || String(r.entity_id) !== r.task_id);
  expect(notOnce, 'receipts not fulfilled by exactly one task').to.deep.equal([]);

  const sessions = await db('sessions as s')
    .leftJoin('session_messages as m', (on) => on.on('m.session_id', 's.id').andOnVal('m.author', 'scribe'))
    .groupBy('s.id', 's.state', 's.error_message')
    .select('s.id', 's.state', 's.error_message', db.raw('count(m.id) as replies'));
  const notAnswered = sessions.filter((s) => s.state !== 'waiting' || Number(s.replies) !== 1);
  expect(notAnswered, 'sessions not answered exactly once').to.deep.equal([]);
  return { receipts: receipts.length, sessions: sessions.length };
}

async function count(db: Db, table: string): Promise<number> {
  return Number((await db(table).count({ n: '*' }).first())!.n);
}

/** Waits until no receipt and no session is left to do. */
async function settled(db: Db, timeoutMs: number): Promise<void> {
  await eventually(async () => {
    const receipts = await db('requests').whereIn('status', ['accepted', 'dispatched']).count({ n: '*' }).first();
    const sessions = await db('sessions').whereRaw('reply_due').count({ n: '*' }).first();
    return Number(receipts!.n) + Number(sessions!.n) === 0 ? true : undefined;
  }, timeoutMs);
}

/** Waits until the count of receipts and sessions left to do stays the same for two seconds. */
async function stalled(db: Db): Promise<void> {
  const left = async () => {
    const receipts = await db('requests').whereIn('status', ['accepted', 'dispatched']).count({ n: '*' }).first();
    const sessions = await db('sessions').whereRaw('reply_due').count({ n: '*' }).first();
    const tasks = await db('tasks').whereIn('status', ['open', 'in_progress']).count({ n: '*' }).first();
    return `${receipts!.n}/${sessions!.n}/${tasks!.n}`;
  };
  let last = await left();
  await eventually(async () => {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const now = await left();
    const same = now === last;
    last = now;
    return same ? true : undefined;
  }, 60_000);
}

/** Makes every lease still held lapse now, as it would once its holder stopped renewing it. */
async function lapseHeldWork(db: Db): Promise<void> {
  const past = '2000-01-01T00:00:00.000Z';
  await db('requests').where({ status: 'dispatched' }).update({ available_at: past });
  await db('tasks').whereNotNull('claim_token').update({ lease_until: past });
  await db('sessions').whereNotNull('claim_token').update({ lease_until: past });
}

describe('several processes on one database', function () {
  this.timeout(180_000);
  let install: Awaited<ReturnType<typeof provision>>;
  let db: Db;
  const processes: ServerProcess[] = [];

  before(async () => {
    install = await provision(tempDir());
    await install.close();
    db = install.install.open();
    for (let i = 0; i < 3; i++) processes.push(await startProcess('src/main.ts', { ...install.env, RATE_LIMIT_PER_MINUTE: '0' }));
  });
  after(async () => {
    for (const p of processes) p.child.kill('SIGKILL');
    await db?.destroy();
    await install?.install.drop();
  });

  const submit = (p: ServerProcess, summary: string) =>
    fetch(`${p.url}/api/v1/scribes/${install.scribe.slug}/requests`, {
      method: 'POST',
      headers: { 'X-Api-Key': install.key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ task: { summary } }),
    }).then((res) => res.status);
  const chat = (p: ServerProcess, message: string) =>
    fetch(`${p.url}/api/v1/scribes/${install.scribe.slug}/chat`, {
      method: 'POST',
      headers: { 'X-Api-Key': install.key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ message }),
    }).then((res) => res.status);

  it('three processes: 1,000 submits and 200 chat messages spread over them → each receipt fulfilled by one task, each session answered once', async () => {
    const [submits, chats] = await Promise.all([spread(1000, 12, (i) => submit(processes[i % 3]!, `spread ${i}`)), spread(200, 4, (i) => chat(processes[i % 3]!, `hello ${i}`))]);
    expect(submits.filter((s) => s !== 202)).to.deep.equal([]);
    expect(chats.filter((s) => s !== 202)).to.deep.equal([]);
    await settled(db, 60_000);
    expect(await expectEachDoneOnce(db)).to.deep.equal({ receipts: 1000, sessions: 200 });
  });

  it('three processes ticking one every-second schedule → one fire and one receipt per fire time, each fire time fired or caught up', async () => {
    const id = '01935f00-0000-7000-8000-0000000005c1';
    const start = new Date(Math.ceil(Date.now() / 1000) * 1000 + 1000);
    await db('schedules').insert({
      id,
      organization_id: install.organizationId,
      scribe_id: install.scribe.id,
      cron: '* * * * * *',
      timezone: 'UTC',
      overlap: 'allow',
      summary: 'every second',
      paused: false,
      next_run_at: start.toISOString(),
      created_at: start.toISOString(),
      updated_at: start.toISOString(),
    });
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    await db('schedules').where({ id }).update({ paused: true, next_run_at: null });
    // A fire under way when it was paused ends within its transaction.
    await new Promise((resolve) => setTimeout(resolve, 500));

    const fires = await db('schedule_fires').where({ schedule_id: id }).orderBy('fire_at').select('fire_at', 'outcome', 'request_id', 'missed_since');
    expect(fires.length).to.be.within(3, 7);
    expect(
      fires.every((f) => f.outcome === 'submitted' && f.request_id),
      'every fire submitted',
    ).to.equal(true);
    // Each second fired once; a second passed over (every process busy at once) is owned by the next fire's catch-up.
    for (let i = 1; i < fires.length; i++) {
      const gap = Date.parse(fires[i]!.fire_at) - Date.parse(fires[i - 1]!.fire_at);
      if (gap !== 1000) expect(fires[i]!.missed_since, `fire ${fires[i]!.fire_at}`).to.equal(new Date(Date.parse(fires[i - 1]!.fire_at) + 1000).toISOString());
      else expect(fires[i]!.missed_since).to.equal(null);
    }
    const receipts = await db('requests as r')
      .leftJoin('schedule_fires as f', 'f.request_id', 'r.id')
      .where({ 'r.origin_type': 'schedule', 'r.origin_id': id })
      .groupBy('r.id')
      .select('r.id', db.raw('count(f.id) as fires'));
    expect(receipts).to.have.length(fires.length);
    expect(
      receipts.filter((r) => Number(r.fires) !== 1),
      'receipts not made by exactly one fire',
    ).to.deep.equal([]);
    await settled(db, 30_000);
    await expectEachDoneOnce(db);
  });

  it('SIGKILL of one process mid-load → the others take up its work once its leases lapse, each item still done once', async () => {
    const before = { receipts: await count(db, 'requests'), sessions: await count(db, 'sessions') };
    // Calls keep going to all three, the killed one included.
    const targets = [...processes];
    const load = Promise.all([spread(300, 9, (i) => submit(targets[i % 3]!, `killed ${i}`)), spread(60, 3, (i) => chat(targets[i % 3]!, `again ${i}`))]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const killed = processes.splice(2, 1)[0]!;
    killed.child.kill('SIGKILL');
    await killed.exited;
    const [submits, chats] = await load;
    // Calls to the killed process may have failed; every call another process answered was accepted.
    expect(submits.filter((s) => s !== 202 && !(s instanceof Error))).to.deep.equal([]);
    expect(chats.filter((s) => s !== 202 && !(s instanceof Error))).to.deep.equal([]);
    // The killed process's leases (10 s for a dispatch batch, 30 s for agent work) would lapse in
    // time; once the survivors have done all they can, what is still held was held by the dead
    // process, and making its leases lapse stands in for that wait.
    await stalled(db);
    await lapseHeldWork(db);
    await settled(db, 30_000);
    const done = await expectEachDoneOnce(db);
    // Each accepted call made one item; a call cut by the kill may have made one too.
    expect(done.receipts).to.be.within(before.receipts + submits.filter((s) => s === 202).length, before.receipts + 300);
    expect(done.sessions).to.be.within(before.sessions + chats.filter((s) => s === 202).length, before.sessions + 60);
  });
});

describe('work held by a killed process', function () {
  this.timeout(60_000);

  it('SIGKILL while the model call is under way → a peer leaves the live lease alone, then takes the work up once it lapses, each item done once', async () => {
    const fake = await startFakeOpenAi();
    const install = await provision(tempDir());
    await install.services.scribes.setAgent(install.organizationId, install.scribe.slug, { agent: 'openai' });
    await install.close();
    const db = install.install.open();
    const env = { ...install.env, OPENAI_BASE_URL: fake.baseUrl, OPENAI_MODEL: 'm', OPENAI_MAX_RETRIES: '0' };
    const started: ServerProcess[] = [];
    const post = async (p: ServerProcess, path: string, body: object) => {
      const res = await fetch(`${p.url}/api/v1/scribes/${install.scribe.slug}${path}`, {
        method: 'POST',
        headers: { 'X-Api-Key': install.key, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status, path).to.equal(202);
      return res.json() as Promise<{ session_id?: string }>;
    };
    const held = async () => ({
      session: await db('sessions').first(),
      task: await db('tasks').first(),
      receipts: await db('requests').select('status', 'entity_id'),
    });
    try {
      // The model never answers A, so A dies holding both leases.
      fake.script({ hang: true }, { hang: true });
      const a = await startProcess('src/main.ts', env);
      started.push(a);
      const sessionId = (await post(a, '/chat', { message: 'hello' })).session_id;
      await post(a, '/requests', { task: { summary: 'Work', acceptance_criteria: 'ok' } });
      await eventually(async () => (fake.seen.length === 2 ? true : undefined), 10_000);
      const claimed = await held();
      expect(claimed.session).to.include({ id: sessionId, state: 'running', reply_due: stored(true) });
      expect(claimed.task).to.include({ status: 'in_progress', attempts: 1 });
      expect(claimed.receipts).to.deep.equal([{ status: 'fulfilled', entity_id: claimed.task.id }]);
      for (const row of [claimed.session, claimed.task]) {
        expect(row.claim_token).to.be.a('string');
        expect(new Date(row.lease_until).getTime()).to.be.above(Date.now());
      }

      // A peer running alongside must not take work whose lease is still live.
      const b = await startProcess('src/main.ts', env);
      started.push(b);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      // A renews its own leases while it lives (every third of a lease; on a busy machine B's start can take that long): compare with the last.
      const beforeKill = await held();
      a.child.kill('SIGKILL');
      await a.exited;
      const afterKill = await held();
      expect(afterKill.session).to.include({ state: 'running', reply_due: stored(true), claim_token: claimed.session.claim_token, lease_until: beforeKill.session.lease_until });
      expect(afterKill.task).to.include({ status: 'in_progress', claim_token: claimed.task.claim_token, lease_until: beforeKill.task.lease_until });
      expect(await db('session_messages').where({ author: 'scribe' }).pluck('id')).to.deep.equal([]);
      expect(fake.seen, 'only A called the model').to.have.length(2);

      // Stands in for the lease's time passing with no renewal from the dead process.
      fake.script({ reply: 'Recovered.' }, { reply: 'Recovered.' });
      const lapsed = await Promise.all(
        (
          [
            ['sessions', claimed.session],
            ['tasks', claimed.task],
          ] as const
        ).map(([table, row]) => db(table).where({ claim_token: row.claim_token }).update({ lease_until: '2000-01-01T00:00:00.000Z' })),
      );
      expect(lapsed).to.deep.equal([1, 1]);

      await settled(db, 10_000);
      await eventually(async () => ((await db('tasks').first()).status === 'done' ? true : undefined), 10_000);
      expect(await expectEachDoneOnce(db)).to.deep.equal({ receipts: 1, sessions: 1 });
      expect(await db('tasks').select('id', 'status', 'result', 'claim_token')).to.deep.equal([{ id: claimed.task.id, status: 'done', result: 'Recovered.', claim_token: null }]);
      expect(await db('session_messages').where({ session_id: sessionId }).orderBy('id').select('author', 'text')).to.deep.equal([
        { author: 'user', text: 'hello' },
        { author: 'scribe', text: 'Recovered.' },
      ]);
      // The in_progress A recorded is kept, not recorded again by B.
      expect(await db('task_events').orderBy('id').pluck('to_status')).to.deep.equal(['open', 'in_progress', 'done']);
      expect(fake.seen, 'B called the model once per item').to.have.length(4);
    } finally {
      for (const p of started) p.child.kill('SIGKILL');
      await Promise.all(started.map((p) => p.exited));
      await fake.close();
      await db.destroy();
      await install.install.drop();
    }
  });
});

describe('a rate limit across processes', function () {
  this.timeout(120_000);

  it('RATE_LIMIT_PER_MINUTE=20 allows 20 calls of a key in total across three processes', async () => {
    const install = await provision(tempDir());
    await install.close();
    const processes: ServerProcess[] = [];
    try {
      for (let i = 0; i < 3; i++) processes.push(await startProcess('src/main.ts', { ...install.env, RATE_LIMIT_PER_MINUTE: '20' }));
      const statuses = await spread(45, 6, (i) =>
        fetch(`${processes[i % 3]!.url}/api/v1/scribes/${install.scribe.slug}/requests`, { headers: { 'X-Api-Key': install.key } }).then((res) => res.status),
      );
      expect(statuses.filter((s) => s === 200)).to.have.length(20);
      expect(statuses.filter((s) => s === 429)).to.have.length(25);
    } finally {
      for (const p of processes) p.child.kill('SIGKILL');
      await install.install.drop();
    }
  });
});

describe('process roles and WEB_CONCURRENCY', function () {
  this.timeout(120_000);

  it('PROCESS_ROLE=web serves but leaves dispatch to a PROCESS_ROLE=worker process, which takes it up', async () => {
    const install = await provision(tempDir());
    await install.close();
    const db = install.install.open();
    const started: ServerProcess[] = [];
    try {
      const web = await startProcess('src/main.ts', { ...install.env, PROCESS_ROLE: 'web' });
      started.push(web);
      expect(await submit()).to.equal(202);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(await db('requests').pluck('status'), 'the web process dispatches nothing').to.deep.equal(['accepted']);
      expect((await fetch(`${web.url}/readyz`)).status, 'a web process is ready without background work').to.equal(200);

      const worker = await startWorkerProcess({ ...install.env, PROCESS_ROLE: 'worker' });
      started.push(worker);
      await eventually(async () => ((await db('requests').pluck('status'))[0] === 'fulfilled' ? true : undefined), 10_000);
      expect(await submit()).to.equal(202);
      await eventually(async () => ((await db('requests').where({ status: 'fulfilled' }).count({ n: '*' }).first())!.n === 2 ? true : undefined), 10_000);
    } finally {
      for (const p of started) p.child.kill('SIGKILL');
      await db.destroy();
      await install.install.drop();
    }

    async function submit() {
      const res = await fetch(`${started[0]!.url}/api/v1/scribes/${install.scribe.slug}/requests`, {
        method: 'POST',
        headers: { 'X-Api-Key': install.key, 'Content-Type': 'application/json' },
        body: JSON.stringify({ task: { summary: 'split roles' } }),
      });
      return res.status;
    }
  });

  it('WEB_CONCURRENCY=2 runs two server processes on one port, and SIGTERM stops them all', async () => {
    const install = await provision(tempDir());
    await install.close();
    const server = await startProcess('src/main.ts', { ...install.env, WEB_CONCURRENCY: '2' });
    try {
      await eventually(async () => (listening(server.output()).size === 2 ? true : undefined), 20_000);
      const statuses = await spread(20, 4, () =>
        fetch(`${server.url}/api/v1/scribes/${install.scribe.slug}/requests`, { headers: { 'X-Api-Key': install.key } }).then((res) => res.status),
      );
      expect(statuses).to.deep.equal(new Array(20).fill(200));
      server.child.kill('SIGTERM');
      expect(await server.exited).to.equal(0);
      expect(server.output().match(/"msg":"scribe stopped"/g)).to.have.length(2);
    } finally {
      server.child.kill('SIGKILL');
      await install.install.drop();
    }
  });

  it('WEB_CONCURRENCY=2 replaces server processes that die, every one of them at once included, and still stops with SIGTERM', async () => {
    const install = await provision(tempDir());
    await install.close();
    const server = await startProcess('src/main.ts', { ...install.env, WEB_CONCURRENCY: '2' });
    try {
      // Killed once the primary knows them ready: one that dies before is a failed start, which stops the group.
      const ready = () => new Set([...server.output().matchAll(/"workerPid":(\d+)[^\n]*"msg":"a server process is ready"/g)].map((m) => Number(m[1])));
      await eventually(async () => (ready().size === 2 ? true : undefined), 20_000);
      const first = [...ready()];
      for (const pid of first) process.kill(pid, 'SIGKILL');
      // Both gone at once: the primary is left with nothing but its restart timers, and must wait for them.
      await eventually(async () => (ready().size === 4 ? true : undefined), 20_000);
      expect(server.child.exitCode, 'the primary is still running').to.equal(null);
      expect(server.output().match(/"msg":"a server process died; starting another"/g)).to.have.length(2);
      // PORT=0 here: with every process gone the port was let go, and the new ones listen on another.
      const url = [...server.output().matchAll(/"url":"(http:\/\/[^"]+)"/g)].at(-1)![1];
      const res = await fetch(`${url}/api/v1/scribes/${install.scribe.slug}/requests`, { headers: { 'X-Api-Key': install.key } });
      expect(res.status).to.equal(200);
      server.child.kill('SIGTERM');
      expect(await server.exited).to.equal(0);
    } finally {
      server.child.kill('SIGKILL');
      await install.install.drop();
    }
  });
});

/** The process ids that logged "scribe is listening". */
function listening(output: string): Set<number> {
  return new Set([...output.matchAll(/"pid":(\d+)[^\n]*"msg":"scribe is listening"/g)].map((m) => Number(m[1])));
}
