import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { expect } from 'chai';
import createClient from 'openapi-fetch';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { openApiDocument } from '../../src/api-docs/openapi.js';
import { TYPES_FILE, clientTypes } from './client/generate.js';
import type { paths } from './client/scribe-api.js';

/**
 * A client as an API user would generate it: types by openapi-typescript from the served
 * document, calls by openapi-fetch. `npm run typecheck` checks this file against those types,
 * so a response or parameter the document gets wrong fails the build, not a user.
 */
describe('a client generated from /api/v1/openapi.json (openapi-typescript, openapi-fetch)', () => {
  let h: Harness;
  let t: Tenant;
  let server: Server;
  let client: ReturnType<typeof createClient<paths>>;
  const called = new Set<string>();

  before(async () => {
    h = await createHarness({ options: { dispatchOnAccept: false, runOnNewWork: false } });
    t = await h.tenant();
    server = h.app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    client = createClient<paths>({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, headers: { 'X-Api-Key': t.key } });
    client.use({ onRequest: ({ request, schemaPath }) => void called.add(`${request.method} ${schemaPath}`) });
  });
  after(async () => {
    await new Promise((resolve) => server.close(resolve));
    await h.close();
  });

  it('is generated from the document the server serves (regenerate: node --import tsx test/api/client/generate.ts)', async () => {
    expect(fs.readFileSync(TYPES_FILE, 'utf8')).to.equal(await clientTypes(await fetchDocument()));
  });

  async function fetchDocument(): Promise<unknown> {
    const { data, response } = await client.GET('/api/v1/openapi.json');
    expect(response.status).to.equal(200);
    return data;
  }

  it('submits a task, polls its receipt and lists receipts', async () => {
    const submitted = await client.POST('/api/v1/scribes/{scribe_id}/requests', {
      params: { path: { scribe_id: t.scribe.slug }, header: { 'Idempotency-Key': 'generated-1' } },
      body: { task: { summary: 'Through a generated client', acceptance_criteria: 'It type-checks' } },
    });
    expect(submitted.response.status).to.equal(202);
    const id = submitted.data!.request.id;
    expect(submitted.data!.request.status).to.equal('accepted');
    await h.services.dispatcher.tick();
    const polled = await client.GET('/api/v1/requests/{id}', { params: { path: { id } } });
    expect(polled.data!.request).to.include({ id, status: 'fulfilled', entity_type: 'task' });
    const listed = await client.GET('/api/v1/scribes/{scribe_id}/requests', { params: { path: { scribe_id: t.scribe.slug }, query: { status: 'fulfilled', limit: 10 } } });
    expect(listed.data!.requests.map((r) => r.id)).to.deep.equal([id]);
    expect(listed.data!.next_cursor).to.equal(null);
  });

  it('reads the documented error of an unknown receipt', async () => {
    const missing = await client.GET('/api/v1/requests/{id}', { params: { path: { id: 'req_unknown' } } });
    expect(missing.response.status).to.equal(404);
    expect(missing.error).to.deep.equal({ error: 'Request not found' });
  });

  it('reads the task a receipt made, lists tasks, answers a waiting task and cancels one', async () => {
    const submitted = await client.POST('/api/v1/scribes/{scribe_id}/requests', {
      params: { path: { scribe_id: t.scribe.slug } },
      body: { task: { summary: 'Which launch comes first?' } },
    });
    await h.services.dispatcher.tick();
    const receipt = await client.GET('/api/v1/requests/{id}', { params: { path: { id: submitted.data!.request.id } } });
    const taskId = receipt.data!.request.entity_id!;
    await h.services.runtime.tick();
    const waiting = await client.GET('/api/v1/tasks/{id}', { params: { path: { id: taskId } } });
    expect(waiting.data!.task.status).to.equal('waiting');
    expect(waiting.data!.task.question).to.include('Which launch comes first?');
    const answered = await client.POST('/api/v1/tasks/{id}/input', { params: { path: { id: taskId } }, body: { input: 'The smaller one' } });
    expect([answered.response.status, answered.data!.task.status]).to.deep.equal([202, 'open']);
    const cancelled = await client.POST('/api/v1/tasks/{id}/cancel', { params: { path: { id: taskId } } });
    expect(cancelled.data!.task.status).to.equal('cancelled');
    const listed = await client.GET('/api/v1/scribes/{scribe_id}/tasks', { params: { path: { scribe_id: t.scribe.slug }, query: { status: 'cancelled' } } });
    expect(listed.data!.tasks.map((task) => task.id)).to.deep.equal([taskId]);
    // A finished task's stream tells its story and ends.
    const events = await client.GET('/api/v1/tasks/{id}/events', { params: { path: { id: taskId } }, parseAs: 'text' });
    expect(events.response.headers.get('content-type')).to.equal('text/event-stream; charset=utf-8');
    expect(events.data!.match(/^event: status$/gm)).to.have.length(5);
    expect(events.data).to.match(/event: status\ndata: \{[^\n]*"status":"cancelled"[^\n]*\}\n\n$/);
  });

  it('holds a conversation: a chat message, its reply, a further message, a cancel', async () => {
    const sent = await client.POST('/api/v1/scribes/{scribe_id}/chat', { params: { path: { scribe_id: t.scribe.slug } }, body: { message: 'Hello from a generated client' } });
    expect(sent.response.status).to.equal(202);
    const id = sent.data!.session_id;
    await h.services.runtime.tick();
    const read = await client.GET('/api/v1/sessions/{id}', { params: { path: { id } } });
    expect(read.data!.session.messages.map((m) => m.author)).to.deep.equal(['user', 'scribe']);
    const further = await client.POST('/api/v1/sessions/{id}/messages', { params: { path: { id } }, body: { message: 'What are you working on?' } });
    expect(further.data!.session.status).to.equal('queued');
    const cancelled = await client.POST('/api/v1/sessions/{id}/cancel', { params: { path: { id } } });
    expect(cancelled.data!.session.status).to.equal('cancelled');
    const closed = await client.POST('/api/v1/sessions/{id}/messages', { params: { path: { id } }, body: { message: 'Still there?' } });
    expect([closed.response.status, closed.error]).to.deep.equal([409, { error: 'Session is closed' }]);
    const events = await client.GET('/api/v1/sessions/{id}/events', { params: { path: { id }, header: { 'Last-Event-ID': '2' } }, parseAs: 'text' });
    expect(
      events
        .data!.split('\n\n')
        .filter(Boolean)
        .map((block) => block.split('\n')[1]),
    ).to.deep.equal([
      // running, the reply (one delta: it came whole), waiting, the further message, queued, cancelled: the events after the user's first message.
      'event: status',
      'event: delta',
      'event: message',
      'event: status',
      'event: message',
      'event: status',
      'event: status',
    ]);
  });

  it('reads an entry and a searched page of entries', async () => {
    const type = await h.services.entryTypes.create(t.organizationId, { name: 'Clients', fields: [{ name: 'Name', type: 'text', primary: true }] });
    const entry = await h.services.entries.create(t.organizationId, type.id, { fields: { Name: 'Generated' } });
    const one = await client.GET('/api/v1/entries/{id}', { params: { path: { id: entry.id } } });
    expect(one.data!.data!.id).to.equal(entry.id);
    const page = await client.GET('/api/v1/entry_types/{entry_type_id}/entries', { params: { path: { entry_type_id: type.id }, query: { q: 'Name:Generated', limit: 5 } } });
    expect(page.data!.data!.map((e) => e.id)).to.deep.equal([entry.id]);
  });

  it('reads the operations endpoints', async () => {
    expect((await client.GET('/healthz')).data).to.deep.equal({ status: 'ok' });
    expect((await client.GET('/readyz')).response.status).to.be.oneOf([200, 503]);
    const metrics = await client.GET('/metrics', { parseAs: 'text' });
    expect(metrics.data).to.include('# HELP');
  });

  it('has called every operation of the document', () => {
    const document = openApiDocument() as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.entries(document.paths).flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`));
    expect([...called].sort()).to.deep.equal(operations.sort());
  });
});
