import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { requestExamples, responseExamples } from '../../src/api-docs/openapi.js';
import * as responses from '../../src/api-docs/responses.js';

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle: { stack?: Layer[] };
  match(path: string): false | { pattern: string };
}

/** Every route of a router tree as `METHOD /path`, with the patterns it is mounted at. */
function routesOf(stack: Layer[], prefix = ''): string[] {
  return stack.flatMap((layer) => {
    if (layer.route) return Object.keys(layer.route.methods).map((m) => `${m.toUpperCase()} ${prefix}${layer.route!.path}`);
    if (!layer.handle.stack) return [];
    const mounted = layer.match('/api/v1/probe');
    const pattern = mounted && mounted.pattern !== '/' ? mounted.pattern : '';
    return routesOf(layer.handle.stack, prefix + pattern);
  });
}

describe('the OpenAPI document (/api/v1/openapi.json) and /docs', () => {
  let h: Harness;
  let t: Tenant;
  let doc: { openapi: string; paths: Record<string, Record<string, unknown>>; components: { schemas: Record<string, unknown> } };
  before(async () => {
    h = await createHarness({ options: { runOnNewWork: false } });
    t = await h.tenant();
    const res = await h.api.get('/api/v1/openapi.json');
    expect(res.status).to.equal(200);
    expect(res.headers['content-type']).to.equal('application/json; charset=utf-8');
    doc = res.body;
  });
  after(() => h.close());

  it('is OpenAPI 3.1 and needs no key', () => {
    expect(doc.openapi).to.equal('3.1.0');
  });

  it('describes every route of the API and the operations endpoints, and nothing that does not exist', () => {
    const appRoutes = routesOf((h.app as unknown as { router: { stack: Layer[] } }).router.stack);
    const api = appRoutes.filter((r) => / \/api\/v1\//.test(r) || / \/(healthz|readyz|metrics)$/.test(r));
    const described = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`));
    expect(api.length).to.be.greaterThan(8);
    expect([...described].sort()).to.deep.equal([...new Set(api)].sort());
  });

  it('gives every operation a unique operationId, a summary and a description, so generated clients get usable method names', () => {
    const operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => ({ at: `${method.toUpperCase()} ${path}`, ...(op as { operationId?: string; summary?: string; description?: string }) })),
    );
    for (const op of operations) {
      expect(op.operationId, op.at).to.match(/^[a-z][A-Za-z]+$/);
      expect(op.summary, op.at).to.be.a('string').and.not.equal('');
      expect(op.description, op.at).to.be.a('string').and.not.equal('');
    }
    expect(new Set(operations.map((op) => op.operationId)).size).to.equal(operations.length);
  });

  it('has request examples that the validating schemas accept, and response examples that follow the response schemas', () => {
    for (const { schema, example } of [...requestExamples, ...responseExamples]) {
      const parsed = schema.safeParse(example);
      expect(parsed.success, JSON.stringify(parsed.error?.issues)).to.equal(true);
    }
    // The examples in the document are those.
    const submit = doc.paths['/api/v1/scribes/{scribe_id}/requests']!.post as { requestBody: { content: { 'application/json': { example: unknown } } } };
    expect(submit.requestBody.content['application/json'].example).to.deep.equal(requestExamples[0]!.example);
  });

  it('matches what the API really answers', async () => {
    const submit = await h.api
      .post(`/api/v1/scribes/${t.scribe.slug}/requests`)
      .set(t.headers)
      .send({ task: { summary: 'documented' } });
    responses.requestEnvelope.parse(submit.body);
    await h.services.dispatcher.tick();
    responses.requestEnvelope.parse((await h.api.get(`/api/v1/requests/${submit.body.request.id}`).set(t.headers)).body);
    responses.requestList.parse((await h.api.get(`/api/v1/scribes/${t.scribe.slug}/requests?limit=1`).set(t.headers)).body);
    const chat = responses.chatResponse.parse((await h.api.post(`/api/v1/scribes/${t.scribe.slug}/chat`).set(t.headers).send({ message: 'hi' })).body);
    await h.services.runtime.tick();
    responses.sessionEnvelope.parse((await h.api.get(`/api/v1/sessions/${chat.session_id}`).set(t.headers)).body);
    const taskId = (await h.api.get(`/api/v1/requests/${submit.body.request.id}`).set(t.headers)).body.request.entity_id;
    responses.taskEnvelope.parse((await h.api.get(`/api/v1/tasks/${taskId}`).set(t.headers)).body);
    responses.taskList.parse((await h.api.get(`/api/v1/scribes/${t.scribe.slug}/tasks`).set(t.headers)).body);
    const type = await h.services.entryTypes.create(t.organizationId, {
      name: 'Docs',
      fields: [
        { name: 'Name', type: 'text', primary: true },
        { name: 'N', type: 'number' },
      ],
    });
    const entry = await h.services.entries.create(t.organizationId, type.id, { fields: { Name: 'x', N: 2 } });
    responses.entryEnvelope.parse((await h.api.get(`/api/v1/entries/${entry.id}`).set(t.headers)).body);
    responses.entryList.parse((await h.api.get(`/api/v1/entry_types/${type.id}/entries`).set(t.headers)).body);
    responses.errorA.parse((await h.api.get('/api/v1/requests/nope').set(t.headers)).body);
    responses.errorB.parse((await h.api.get('/api/v1/entries/nope').set(t.headers)).body);
    responses.health.parse((await h.api.get('/healthz')).body);
    responses.readiness.parse((await h.api.get('/readyz')).body);
  });

  it('serves /docs with Swagger UI from this server, not a CDN', async () => {
    const page = await h.api.get('/docs');
    expect(page.status).to.equal(200);
    expect(page.text)
      .to.include('/docs/assets/swagger-ui-bundle.js')
      .and.include('/assets/docs-init.js')
      .and.not.match(/https?:\/\//);
    const bundle = await h.api.get('/docs/assets/swagger-ui-bundle.js');
    expect(bundle.status).to.equal(200);
    expect(bundle.headers['content-type']).to.match(/javascript/);
    expect((await h.api.get('/docs/assets/swagger-ui.css')).status).to.equal(200);
  });
});
