import { expect } from 'chai';
import { refuseWrites } from '../helpers/databases.js';
import { createHarness, testClock, type Harness, type Tenant } from '../helpers/harness.js';
import { migrationConfig } from '../../src/db/migrate.js';

describe('health, readiness and metrics', () => {
  let h: Harness;
  let t: Tenant;
  const clock = testClock();
  before(async () => {
    h = await createHarness({ options: { clock, dispatchOnAccept: false, runOnNewWork: false } });
    t = await h.tenant();
  });
  after(() => h.close());

  it('/healthz answers 200 {"status":"ok"} without a key', async () => {
    const res = await h.api.get('/healthz');
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ status: 'ok' });
    expect(res.headers['x-request-id']).to.be.a('string');
  });

  it('/readyz is 503 until the dispatcher and the agent runtime have ticked, 200 after, and 503 again once they stop', async () => {
    const before = await h.api.get('/readyz');
    expect(before.status).to.equal(503);
    expect(before.body).to.deep.equal({
      status: 'not ready',
      checks: { database: 'ok', migrations: 'ok', dispatcher: 'no tick in the last 10s', agents: 'no tick in the last 10s' },
    });
    await h.services.dispatcher.tick();
    await h.services.runtime.tick();
    const ready = await h.api.get('/readyz');
    expect(ready.status).to.equal(200);
    expect(ready.body).to.deep.equal({ status: 'ready', checks: { database: 'ok', migrations: 'ok', dispatcher: 'ok', agents: 'ok' } });
    clock.advance(10_001);
    expect((await h.api.get('/readyz')).body.checks).to.include({ dispatcher: 'no tick in the last 10s', agents: 'no tick in the last 10s' });
  });

  it('/readyz names pending migrations and an unwritable database', async () => {
    await h.services.dispatcher.tick();
    await h.services.runtime.tick();
    await h.db.migrate.down(migrationConfig());
    try {
      const res = await h.api.get('/readyz');
      expect(res.status).to.equal(503);
      expect(res.body.checks.migrations).to.match(/^pending: \d+_\w+$/);
    } finally {
      await h.db.migrate.latest(migrationConfig());
    }
    const allowWrites = await refuseWrites(h.db);
    try {
      const res = await h.api.get('/readyz');
      expect(res.status).to.equal(503);
      expect(res.body.checks.database).to.match(/^not writable: /);
    } finally {
      await allowWrites();
    }
    expect((await h.api.get('/readyz')).status).to.equal(200);
  });

  it('/metrics serves Prometheus text: requests by route and status, latency, receipts, dispatch latency, agent backlog', async () => {
    const submit = await h.api
      .post(`/api/v1/scribes/${t.scribe.slug}/requests`)
      .set(t.headers)
      .send({ task: { summary: 'measured' } });
    await h.api.get(`/api/v1/requests/${submit.body.request.id}`).set(t.headers);
    await h.api.get('/api/v1/requests/req_01JD0000000000000000000000').set(t.headers);
    clock.advance(25);
    await h.services.dispatcher.tick();
    const res = await h.api.get('/metrics');
    expect(res.status).to.equal(200);
    expect(res.headers['content-type']).to.match(/^text\/plain; version=0\.0\.4/);
    const text = res.text;
    expect(text).to.match(/scribe_http_requests_total\{method="GET",route="\/api\/v1\/requests\/:id",status="200"\} 1/);
    expect(text).to.match(/scribe_http_requests_total\{method="GET",route="\/api\/v1\/requests\/:id",status="404"\} 1/);
    expect(text).to.match(/scribe_http_requests_total\{method="POST",route="\/api\/v1\/scribes\/:scribe_id\/requests",status="202"\} 1/);
    expect(text).to.match(/scribe_http_request_duration_seconds_bucket\{le="0\.1",method="GET",route="\/api\/v1\/requests\/:id",status="200"\} 1/);
    expect(text).to.match(/scribe_receipts\{status="fulfilled"\} 1/);
    expect(text).to.match(/scribe_dispatch_latency_seconds_count\{outcome="fulfilled"\} 1/);
    expect(text).to.match(/scribe_dispatch_latency_seconds_bucket\{le="0\.025",outcome="fulfilled"\} 1/);
    expect(text).to.match(/scribe_agent_backlog\{kind="tasks"\} 1/);
    expect(text).to.match(/process_resident_memory_bytes \d+/);
  });

  it("/metrics counts a powered-off scribe's queued work as parked (scribe_agent_parked), not as backlog, until it is powered on", async () => {
    const metric = async (name: string, kind: string) => Number(new RegExp(`^${name}\\{kind="${kind}"\\} (\\d+)$`, 'm').exec((await h.api.get('/metrics')).text)?.[1]);
    const backlog = await metric('scribe_agent_backlog', 'sessions');
    const parked = await metric('scribe_agent_parked', 'sessions');
    const off = await h.tenant({ slug: 'asleep' });
    await h.services.scribes.setState(off.organizationId, 'asleep', 'powered_off');
    expect((await h.api.post('/api/v1/scribes/asleep/chat').set(off.headers).send({ message: 'Anyone there?' })).status).to.equal(202);
    expect(await metric('scribe_agent_backlog', 'sessions')).to.equal(backlog);
    expect(await metric('scribe_agent_parked', 'sessions')).to.equal(parked + 1);
    await h.services.scribes.setState(off.organizationId, 'asleep', 'active');
    expect(await metric('scribe_agent_backlog', 'sessions')).to.equal(backlog + 1);
    expect(await metric('scribe_agent_parked', 'sessions')).to.equal(parked);
  });

  it('answers /metrics, /healthz and /readyz at their exact paths only, so a proxy that guards /metrics guards every way to it', async () => {
    for (const path of ['/metrics/', '/METRICS', '/Metrics/', '/healthz/', '/HEALTHZ', '/readyz/']) {
      const res = await h.api.get(path);
      expect(res.status, path).not.to.equal(200);
      expect(res.text, path).not.to.include('scribe_receipts');
    }
    expect((await h.api.get('/metrics')).status).to.equal(200);
  });

  it('/metrics requires the bearer token when METRICS_TOKEN is set', async () => {
    const guarded = await createHarness({ env: { METRICS_TOKEN: 'scrape-me' } });
    try {
      expect((await guarded.api.get('/metrics')).status).to.equal(401);
      expect((await guarded.api.get('/metrics').set('Authorization', 'Bearer wrong')).status).to.equal(401);
      const ok = await guarded.api.get('/metrics').set('Authorization', 'Bearer scrape-me');
      expect(ok.status).to.equal(200);
      expect(ok.text).to.include('scribe_receipts');
      // The scheme's name in any case (RFC 9110), the token exactly.
      expect((await guarded.api.get('/metrics').set('Authorization', 'bearer scrape-me')).status).to.equal(200);
      expect((await guarded.api.get('/metrics').set('Authorization', 'Bearer SCRAPE-ME')).status).to.equal(401);
    } finally {
      await guarded.close();
    }
  });
});
