import { expect } from 'chai';
import { eventually, tempDir } from '../helpers/harness.js';
import { openInstall } from '../helpers/databases.js';
import { provision } from '../helpers/provision.js';
import { startProcess, startWorkerProcess, type ServerProcess } from '../helpers/process.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { operatorActor } from '../../src/audit/service.js';

/** Outbound webhooks across real processes on one database (the suite's: SQLite file or PostgreSQL). */
describe('outbound webhooks across processes', function () {
  this.timeout(120_000);
  const processes: ServerProcess[] = [];
  const receivers: WebhookReceiver[] = [];
  after(async () => {
    for (const p of processes) p.child.kill('SIGKILL');
    await Promise.all(receivers.map((r) => r.close()));
  });

  /**
   * An install with one endpoint for `request.fulfilled` at `url`. The URL names localhost: a
   * name is checked when connecting, by the servers, which run with WEBHOOKS_ALLOW_PRIVATE=true.
   */
  async function install(url: string) {
    const dataDir = tempDir();
    const p = await provision(dataDir);
    await p.services.webhooks.create(operatorActor(p.organizationId), { url, events: ['request.fulfilled'] });
    await p.close();
    return { dataDir, key: p.key, env: { ...p.env, WEBHOOKS_ALLOW_PRIVATE: 'true' } };
  }

  async function submit(url: string, key: string, n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const res = await fetch(`${url}/api/v1/scribes/atlas/requests`, {
        method: 'POST',
        headers: { 'X-Api-Key': key, 'Content-Type': 'application/json' },
        body: JSON.stringify({ task: { summary: `Item ${i}` } }),
      });
      expect(res.status).to.equal(202);
      ids.push(((await res.json()) as { request: { id: string } }).request.id);
    }
    return ids;
  }

  /** How many times each receipt's event arrived. */
  const perReceipt = (r: WebhookReceiver) => {
    const counts = new Map<string, number>();
    for (const e of r.events()) counts.set(e.data.request.id, (counts.get(e.data.request.id) ?? 0) + 1);
    return counts;
  };

  it('still delivers after the process is killed (SIGKILL) between the state change and the delivery', async () => {
    // A port with nobody listening yet: the first attempts are refused and wait for their retry.
    const probe = await startWebhookReceiver();
    const port = probe.port;
    await probe.close();
    const { dataDir, key, env } = await install(`http://localhost:${port}/hook`);

    const first = await startProcess('src/main.ts', env);
    processes.push(first);
    const ids = await submit(first.url, key, 5);
    const db = await openInstall(dataDir);
    try {
      await eventually(async () => {
        const tried = await db('webhook_deliveries').where('attempts', '>=', 1).count({ n: '*' }).first();
        return Number(tried!.n) === 5 ? true : undefined;
      }, 20_000);
      first.child.kill('SIGKILL');
      await first.exited;
      const pending = await db('webhook_deliveries').select('status', 'error');
      expect(pending.map((d) => [d.status, d.error])).to.deep.equal(ids.map(() => ['pending', 'connection refused']));
    } finally {
      await db.destroy();
    }

    const receiver = await startWebhookReceiver(undefined, port);
    receivers.push(receiver);
    const second = await startProcess('src/main.ts', env);
    processes.push(second);
    // The first retry waits 5 s (±10 %).
    await receiver.waitFor(5, 20_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const counts = perReceipt(receiver);
    expect([...counts.keys()].sort()).to.deep.equal([...ids].sort());
    expect([...counts.values()]).to.deep.equal([1, 1, 1, 1, 1]);
    second.child.kill('SIGTERM');
    await second.exited;
  });

  // Exactly once here: no process dies. Delivery is at least once only after a crash (a
  // claim that lapses mid-attempt is tried again with the same webhook-id), as the test above shows.
  it('delivers each event once with two processes sending', async () => {
    const receiver = await startWebhookReceiver();
    receivers.push(receiver);
    const { key, env } = await install(`http://localhost:${receiver.port}/hook`);
    const web = await startProcess('src/main.ts', env);
    const worker = await startWorkerProcess({ ...env, PROCESS_ROLE: 'worker' });
    processes.push(web, worker);
    const ids = await submit(web.url, key, 200);
    await receiver.waitFor(200, 60_000);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const counts = perReceipt(receiver);
    expect(counts.size).to.equal(200);
    expect([...counts.keys()].sort()).to.deep.equal([...ids].sort());
    const repeated = [...counts].filter(([, n]) => n !== 1);
    expect(repeated, 'events delivered more than once').to.deep.equal([]);
    for (const p of [web, worker]) p.child.kill('SIGTERM');
    await Promise.all([web.exited, worker.exited]);
  });
});
