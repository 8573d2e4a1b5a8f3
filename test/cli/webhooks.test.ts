import { expect } from 'chai';
import { cliInstall } from '../helpers/cli.js';
import { openInstall } from '../helpers/databases.js';
import { EVENT_TYPES } from '../../src/webhooks/events.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';

describe('the admin CLI: webhooks', function () {
  this.timeout(90_000);
  const cli = cliInstall({ scribe: 'atlas' });
  const { admin, json, dir } = cli;

  it('creates an endpoint as docs/webhooks.md prints it, edits, tests, rotates, shows, lists and deletes it, each audited as the operator', async () => {
    const created = await json('webhook', 'create', '--org', cli.orgId, '--url', 'https://hooks.example.com/scribe');
    expect(Object.keys(created)).to.deep.equal(['id', 'url', 'secret', 'events']);
    expect(created.secret).to.match(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(created.events).to.deep.equal([...EVENT_TYPES]);
    const some = await json('webhook', 'create', '--org', cli.orgId, '--url', 'https://hooks.example.com/failures', '--events', 'request.failed,session.failed');
    expect(some.events).to.deep.equal(['request.failed', 'session.failed']);

    const edited = await json('webhook', 'edit', '--id', created.id, '--events', 'task.done', '--enabled', 'false', '--description', 'Ops');
    expect(edited).to.deep.include({ id: created.id, events: ['task.done'], enabled: false, description: 'Ops', disabled_reason: null });
    expect(edited).not.to.have.property('secret');
    await json('webhook', 'edit', '--id', created.id, '--enabled', 'true', '--events', 'all');

    const tested = await json('webhook', 'test', '--id', created.id);
    expect(tested.event_id).to.match(/^evt_/);
    const rotated = await json('webhook', 'rotate-secret', '--id', created.id);
    expect(rotated.secret)
      .to.match(/^whsec_/)
      .and.not.equal(created.secret);
    expect(Date.parse(rotated.previous_secret_valid_until)).to.be.greaterThan(Date.now() + 23 * 3_600_000);

    const shown = await json('webhook', 'show', '--id', created.id);
    expect(shown.events).to.deep.equal([...EVENT_TYPES]);
    expect(shown.deliveries.map((d: { event_id: string; event_type: string; status: string }) => [d.event_id, d.event_type, d.status])).to.deep.equal([
      [tested.event_id, 'webhook.test', 'pending'],
    ]);
    expect(JSON.stringify(shown)).not.to.include(rotated.secret);
    const listed = await json('webhook', 'list', '--org', cli.orgId);
    expect(listed.webhooks.map((w: { id: string }) => w.id).sort()).to.deep.equal([created.id, some.id].sort());

    expect(await json('webhook', 'delete', '--id', some.id)).to.deep.equal({ id: some.id, deleted: true });
    const db = await openInstall(dir);
    try {
      expect(await db('webhook_endpoints').pluck('id')).to.deep.equal([created.id]);
      const audit = await db('audit_events').where({ subject_type: 'webhook' }).orderBy('id').select('action', 'actor_type');
      expect(audit.map((a) => a.action)).to.deep.equal([
        'webhook.create',
        'webhook.create',
        'webhook.update',
        'webhook.disable',
        'webhook.update',
        'webhook.enable',
        'webhook.test',
        'webhook.rotate_secret',
        'webhook.delete',
      ]);
      expect(new Set(audit.map((a) => a.actor_type))).to.deep.equal(new Set(['operator']));
    } finally {
      await db.destroy();
    }
  });

  it("leaves an event's deliveries to the servers: a command sends none itself, under its own settings", async () => {
    const receiver = await startWebhookReceiver();
    const env = cli.env;
    try {
      // The shell allows private addresses, as a server of this install may; the command still must not send.
      cli.env = { ...env, WEBHOOKS_ALLOW_PRIVATE: 'true' };
      const created = await json('webhook', 'create', '--org', cli.orgId, '--url', `${receiver.url}/hook`);
      const tested = await json('webhook', 'test', '--id', created.id);
      expect(receiver.received).to.deep.equal([]);
      const db = await openInstall(dir);
      try {
        const delivery = await db('webhook_deliveries').where({ endpoint_id: created.id }).first();
        expect([delivery.event_id, delivery.status, delivery.attempts]).to.deep.equal([tested.event_id, 'pending', 0]);
        expect((await db('webhook_endpoints').where({ id: created.id }).first()).failing_since).to.equal(null);
      } finally {
        await db.destroy();
      }
      await json('webhook', 'delete', '--id', created.id);
    } finally {
      cli.env = env;
      await receiver.close();
    }
  });

  for (const [args, message] of [
    [['webhook', 'create', '--org', 'ORG', '--url', 'http://127.0.0.1:9/x'], 'error: URL must not point at a private or local address (WEBHOOKS_ALLOW_PRIVATE=true allows it)'],
    [['webhook', 'create', '--org', 'ORG', '--url', 'https://example.com', '--events', 'task.lost'], `error: Unknown event type: task.lost (expected ${EVENT_TYPES.join(', ')})`],
    [['webhook', 'delete', '--id', '01935f00-0000-7000-8000-000000000000'], 'error: Webhook endpoint not found'],
  ] as const) {
    it(`refuses ${args.slice(0, 2).join(' ')} ${args
      .slice(2)
      .filter((a) => a.startsWith('--'))
      .join(' ')} with "${message}" and exit 1`, async () => {
      const result = await admin(...args.map((a) => (a === 'ORG' ? cli.orgId : a)));
      expect(result.stderr.trim()).to.equal(message);
      expect(result.code).to.equal(1);
    });
  }

  it('refuses --enabled other than true or false as a usage error (exit 2)', async () => {
    const { id } = await json('webhook', 'create', '--org', cli.orgId, '--url', 'https://example.com/hook');
    const result = await admin('webhook', 'edit', '--id', id, '--enabled', 'yes');
    expect(result.code).to.equal(2);
    expect(result.stderr).to.include('--enabled must be true or false');
  });
});
