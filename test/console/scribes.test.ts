import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { signIn, type ConsoleClient } from '../helpers/console.js';

describe('console scribes: create and rename', () => {
  let h: Harness;
  let t: Tenant;
  let admin: ConsoleClient;
  before(async () => {
    h = await createHarness({ options: { runOnNewWork: false, dispatchOnAccept: false } });
    t = await h.tenant();
    admin = await signIn(h, t, 'admin');
  });
  after(() => h.close());

  it('creates a scribe with its agent settings from New scribe, audited, and opens its page', async () => {
    expect((await admin.get('/scribes')).text).to.include('href="/scribes/new"');
    expect((await admin.get('/scribes/new')).status).to.equal(200);
    const res = await admin.post('/scribes', {
      name: 'Nova',
      slug: 'nova',
      state: 'powered_off',
      agent: 'openai',
      instructions: 'Be brief.',
      model: 'llama3.2',
      base_url: 'https://models.example.com/v1',
      api_key: 'sk-console-secret',
      vision: 'on',
      max_tool_rounds: '4',
      token_budget: '5000',
      max_concurrency: '12',
    });
    expect(res.status).to.equal(303);
    expect(res.headers.location).to.equal('/b/nova');
    const page = await admin.get('/b/nova');
    expect(page.text).to.include('Nova is created: its API is at /api/v1/scribes/nova.');
    const row = await h.db('scribes').where({ organization_id: t.organizationId, slug: 'nova' }).first();
    expect(row).to.include({
      name: 'Nova',
      state: 'powered_off',
      agent: 'openai',
      instructions: 'Be brief.',
      model: 'llama3.2',
      model_base_url: 'https://models.example.com/v1',
      max_tool_rounds: 4,
      token_budget: 5000,
      max_concurrency: 12,
    });
    expect(Boolean(row.model_vision)).to.equal(true);
    expect(row.model_api_key)
      .to.match(/^sealed:v1:/)
      .and.not.include('sk-console-secret');
    const audit = await h.db('audit_events').where({ subject_type: 'scribe', subject_id: row.id });
    expect(audit.map((e) => [e.action, e.actor_label, e.detail])).to.deep.equal([['scribe.create', admin.email, 'nova (powered_off, openai)']]);
  });

  it("creates with the CLI's defaults: active, the builtin agent, the server's model", async () => {
    await admin.post('/scribes', {
      name: 'Plain',
      slug: 'plain',
      state: 'active',
      agent: 'builtin',
      instructions: '',
      model: '',
      base_url: '',
      api_key: '',
      max_tool_rounds: '',
      token_budget: '',
      max_concurrency: '',
    });
    const row = await h.db('scribes').where({ organization_id: t.organizationId, slug: 'plain' }).first();
    expect(row).to.include({
      state: 'active',
      agent: 'builtin',
      model: null,
      model_base_url: null,
      model_api_key: null,
      max_tool_rounds: null,
      token_budget: null,
      max_concurrency: null,
    });
  });

  const invalid: Array<[string, Record<string, string>, string]> = [
    ['a bad slug', { name: 'Bad', slug: 'Bad Slug' }, 'Slug must be 1 to 63 lowercase letters, digits and hyphens, starting with a letter or digit'],
    ['a slug already used', { name: 'Again', slug: 'atlas' }, 'Slug is already used by another scribe in this organization'],
    ['a blank name', { name: '  ', slug: 'nameless' }, 'Name is required'],
    ['a bad state', { name: 'S', slug: 'sleepy', state: 'asleep' }, 'State must be one of active, powered_off, unprovisioned'],
    ['too few tool rounds', { name: 'R', slug: 'rounds', max_tool_rounds: '0' }, 'Tool rounds must be a whole number from 1 to 50'],
    [
      'a private model address',
      { name: 'P', slug: 'private', base_url: 'http://127.0.0.1:11434/v1' },
      'Base URL must not point at a private or local address (MODELS_ALLOW_PRIVATE=true allows it)',
    ],
  ];
  for (const [what, form, message] of invalid) {
    it(`answers 422 "${message}" for ${what}, keeping what was typed and creating nothing`, async () => {
      const before = await h.db('scribes').count({ n: '*' }).first();
      const res = await admin.post('/scribes', { state: 'active', agent: 'builtin', instructions: 'Keep me', ...form });
      expect(res.status).to.equal(422);
      expect(res.text).to.include(`<p class="flash flash-error" role="alert">${message.replace(/&/g, '&amp;')}</p>`);
      expect(res.text).to.include(`value="${form.slug}"`).and.include('Keep me');
      expect(await h.db('scribes').count({ n: '*' }).first()).to.deep.equal(before);
    });
  }

  it('renames a scribe from its page, audited; its slug stays', async () => {
    const res = await admin.post(`/b/${t.scribe.slug}/name`, { name: '  Atlas the Second ' });
    expect(res.status).to.equal(303);
    expect(res.headers.location).to.equal(`/b/${t.scribe.slug}/settings`);
    const page = await admin.get(`/b/${t.scribe.slug}/settings`);
    expect(page.text).to.include('Renamed to Atlas the Second.').and.include('<h1>Atlas the Second');
    const row = await h.db('scribes').where({ id: t.scribe.id }).first();
    expect(row).to.include({ name: 'Atlas the Second', slug: t.scribe.slug });
    const audit = await h.db('audit_events').where({ subject_id: t.scribe.id, action: 'scribe.rename' });
    expect(audit.map((e) => e.detail)).to.deep.equal(['Atlas the Second']);
  });

  it("refuses a blank or too long name on rename with the service's message", async () => {
    for (const [name, message] of [
      [' ', 'Name is required'],
      ['x'.repeat(201), 'Name must be at most 200 characters'],
    ]) {
      const res = await admin.post(`/b/${t.scribe.slug}/name`, { name: name! });
      expect([res.status, res.headers.location]).to.deep.equal([303, `/b/${t.scribe.slug}/settings`]);
      expect((await admin.get(`/b/${t.scribe.slug}/settings`)).text).to.include(message);
    }
    expect((await h.db('scribes').where({ id: t.scribe.id }).first()).name).to.equal('Atlas the Second');
  });

  it('refuses a viewer New scribe and both actions, with a valid CSRF token', async () => {
    const viewer = await signIn(h, t, 'viewer');
    expect((await viewer.get('/scribes')).text).not.to.include('href="/scribes/new"');
    for (const tab of ['', '/settings']) expect((await viewer.get(`/b/${t.scribe.slug}${tab}`)).text).not.to.include('/name"');
    expect((await viewer.get('/scribes/new')).status).to.equal(403);
    expect((await viewer.post('/scribes', { name: 'Mine', slug: 'mine' })).status).to.equal(403);
    expect((await viewer.post(`/b/${t.scribe.slug}/name`, { name: 'Mine' })).status).to.equal(403);
    expect(await h.db('scribes').where({ slug: 'mine' }).first()).to.equal(undefined);
    expect((await h.db('scribes').where({ id: t.scribe.id }).first()).name).to.equal('Atlas the Second');
  });

  it('refuses a form without the CSRF token', async () => {
    const res = await admin.agent.post('/scribes').type('form').send({ name: 'Forged', slug: 'forged' });
    expect(res.status).to.equal(403);
    expect(await h.db('scribes').where({ slug: 'forged' }).first()).to.equal(undefined);
  });
});
