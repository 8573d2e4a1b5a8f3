import fs from 'node:fs';
import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { createHarness, eventually, type Harness, type Tenant } from '../helpers/harness.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';
import { operatorActor } from '../../src/audit/service.js';

const DOC = fileURLToPath(new URL('../../docs/webhooks.md', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The doc's ```js blocks, in order. */
function jsBlocks(): string[] {
  return [...fs.readFileSync(DOC, 'utf8').matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/** Runs ES module source with node from the repository's root (so `standardwebhooks` resolves as in an app that installed it). */
function runModule(source: string, env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', source], { cwd: ROOT, env: { ...process.env, ...env } }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
    );
  });
}

describe('docs/webhooks.md', function () {
  this.timeout(30_000);
  let h: Harness;
  let t: Tenant;
  before(async () => {
    h = await createHarness({ env: { WEBHOOKS_ALLOW_PRIVATE: 'true' }, options: { dispatchOnAccept: false, runOnNewWork: false } });
    t = await h.tenant();
  });
  after(() => h.close());

  it('has a receiver example that runs as written: it accepts a signed delivery and refuses a tampered one', async () => {
    const [receiverSource] = jsBlocks();
    expect(receiverSource).to.include("from 'standardwebhooks'");
    const probe = await startWebhookReceiver();
    const port = probe.port;
    await probe.close();
    const { endpoint, secret } = await h.services.webhooks.create(operatorActor(t.organizationId), { url: `http://127.0.0.1:${port}/`, events: ['request.fulfilled'] });

    const child = spawn(process.execPath, ['--input-type=module', '-e', receiverSource!], {
      cwd: ROOT,
      env: { ...process.env, WEBHOOK_SECRET: secret, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c) => (output += c));
    child.stderr.on('data', (c) => (output += c));
    try {
      await eventually(async () => ((await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: '{}' }).catch(() => undefined))?.status === 401 ? true : undefined), 10_000);
      const res = await h.api
        .post('/api/v1/scribes/atlas/requests')
        .set(t.headers)
        .send({ task: { summary: 'Tell the receiver' } });
      await h.services.dispatcher.tick();
      await h.services.webhookWorker.tick();
      const [delivery] = await h.db('webhook_deliveries').where({ endpoint_id: endpoint.id });
      expect(delivery).to.deep.include({ status: 'delivered', response_status: 204 });
      await eventually(async () => (output.includes('request.fulfilled') ? true : undefined));
      expect(output).to.include(`"id":"${res.body.request.id}"`);

      // The same headers on another body: refused.
      const event = await h.db('webhook_events').where({ id: delivery.event_id }).first();
      const { signatureHeaders } = await import('../../src/webhooks/sign.js');
      const headers = signatureHeaders(event.id, event.body, [secret], new Date());
      const tampered = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', headers, body: event.body.replace('fulfilled', 'failed') });
      expect(tampered.status).to.equal(401);
      const replayed = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', headers, body: event.body });
      expect(replayed.status).to.equal(204);
      expect(output.match(/request\.fulfilled/g), 'a seen id is not handled again').to.have.length(1);
    } finally {
      child.kill();
    }
  });

  it('has a node:crypto check that accepts what Scribe signs, with either secret during a rotation, and refuses a changed body', async () => {
    const checkSource = jsBlocks()[1]!;
    expect(checkSource).to.include('function verified(');
    const receiver = await startWebhookReceiver();
    try {
      const { endpoint, secret: old } = await h.services.webhooks.create(operatorActor(t.organizationId), { url: receiver.url, events: ['request.failed'] });
      const { secret: fresh } = await h.services.webhooks.rotateSecret(operatorActor(t.organizationId), endpoint.id);
      await h.services.webhooks.sendTest(operatorActor(t.organizationId), endpoint.id);
      await h.services.webhookWorker.tick();
      const [delivery] = receiver.received;
      const check = (secret: string, body: string) =>
        runModule(`${checkSource}\nprocess.stdout.write(String(verified(process.env.SECRET, JSON.parse(process.env.HEADERS), process.env.BODY)));`, {
          SECRET: secret,
          HEADERS: JSON.stringify(delivery!.headers),
          BODY: body,
        });
      expect(await check(old, delivery!.body)).to.equal('true');
      expect(await check(fresh, delivery!.body)).to.equal('true');
      expect(await check(fresh, delivery!.body.replace('webhook.test', 'webhook.tset'))).to.equal('false');
      expect(await check('whsec_' + Buffer.from('another secret entirely').toString('base64'), delivery!.body)).to.equal('false');
    } finally {
      await receiver.close();
    }
  });
});
