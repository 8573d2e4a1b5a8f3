import { expect } from 'chai';
import { createHarness, staffOf, type Harness, type Tenant } from '../helpers/harness.js';
import { stored } from '../helpers/databases.js';
import { signIn, type ConsoleClient } from '../helpers/console.js';
import { startFileServer } from '../helpers/file-server.js';

const HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>';
const ESCAPED = '&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;';
/** The same as a message's Markdown (markdown-it) escapes it. */
const ESCAPED_IN_MARKDOWN = '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;';

describe('console pages and actions', () => {
  let h: Harness;
  let t: Tenant;
  let admin: ConsoleClient;
  before(async () => {
    h = await createHarness({ env: { ATTACHMENTS_ALLOW_PRIVATE: 'true' }, options: { runOnNewWork: false, dispatchOnAccept: false } });
    t = await h.tenant();
    admin = await signIn(h, t, 'admin');
  });
  after(() => h.close());

  const audit = () =>
    h.db('audit_events').where({ organization_id: t.organizationId }).orderBy('id').select('actor_type', 'actor_label', 'action', 'subject_type', 'subject_id', 'detail');

  async function receipt(task: object) {
    const res = await h.api.post(`/api/v1/scribes/${t.scribe.slug}/requests`).set(t.headers).send({ task });
    expect(res.status).to.equal(202);
    return res.body.request.id as string;
  }

  it('escapes hostile text in summaries, messages, entries and instructions', async () => {
    const id = await receipt({ summary: HOSTILE, title: HOSTILE });
    await h.services.dispatcher.tick();
    const chat = await h.api.post(`/api/v1/scribes/${t.scribe.slug}/chat`).set(t.headers).send({ message: HOSTILE });
    await h.services.runtime.tick();
    const type = await h.services.entryTypes.create(t.organizationId, { name: 'Hostile', fields: [{ name: 'Name', type: 'text', primary: true }] });
    const entry = await h.services.entries.create(t.organizationId, type.id, { fields: { Name: HOSTILE } });
    await h.services.scribes.setAgent(t.organizationId, t.scribe.slug, { instructions: HOSTILE });
    const task = await h.db('tasks').where({ request_id: id }).first();
    const pages = [
      `/receipts/${id}`,
      '/receipts',
      `/tasks/${task.id}`,
      '/tasks',
      `/sessions/${chat.body.session_id}`,
      `/b/${t.scribe.slug}`,
      `/b/${t.scribe.slug}/settings`,
      `/entry-types/${type.id}`,
      `/entries/${entry.id}`,
      `/entries/${entry.id}/edit`,
      '/',
    ];
    for (const path of pages) {
      const res = await admin.get(path);
      expect(res.status, path).to.equal(200);
      expect(res.text, path).to.not.include('<script>alert').and.not.include('<img src=x');
    }
    expect((await admin.get(`/receipts/${id}`)).text).to.include(ESCAPED);
    expect((await admin.get(`/sessions/${chat.body.session_id}`)).text).to.include(ESCAPED_IN_MARKDOWN);
    expect((await admin.get(`/entries/${entry.id}`)).text).to.include(ESCAPED);
  });

  it('sends a strict Content-Security-Policy: own scripts and styles only, nothing inline', async () => {
    const res = await admin.get('/');
    const csp = String(res.headers['content-security-policy']);
    expect(csp).to.include("script-src 'self'").and.include("style-src 'self'").and.include("frame-ancestors 'none'");
    expect(csp).to.not.include('unsafe-inline').and.not.include('unsafe-eval');
    expect(res.text)
      .to.not.match(/<script(?![^>]*\bsrc=)[^>]*>/)
      .and.not.match(/\sstyle="/);
  });

  it('shows the dashboard: receipts by status, background work and recent failures', async () => {
    await h.services.scribes.setState(t.organizationId, t.scribe.slug, 'powered_off');
    await h.services.scribes.setState(t.organizationId, t.scribe.slug, 'active');
    await h.services.dispatcher.tick();
    const res = await admin.get('/');
    expect(res.text).to.include('Receipts by status').and.include('Dispatcher').and.include('Agent runtime').and.include('Recent failures');
    expect(res.text).to.match(/status=fulfilled&amp;since=1h">\d+<\/a>/);
  });

  describe('scribes', () => {
    it('powers a scribe off and on, and records who did it', async () => {
      const off = await admin.post(`/b/${t.scribe.slug}/state`, { state: 'powered_off' });
      expect(off.status).to.equal(303);
      expect(off.headers.location).to.equal(`/b/${t.scribe.slug}/settings`);
      expect((await h.db('scribes').where({ id: t.scribe.id }).first()).state).to.equal('powered_off');
      const page = await admin.get(`/b/${t.scribe.slug}/settings`);
      expect(page.text).to.include(`${t.scribe.slug} is now powered off.`);
      await admin.post(`/b/${t.scribe.slug}/state`, { state: 'active' });
      expect((await h.db('scribes').where({ id: t.scribe.id }).first()).state).to.equal('active');
      expect((await audit()).filter((e) => e.action === 'scribe.state').slice(-2)).to.deep.equal([
        { actor_type: 'user', actor_label: admin.email, action: 'scribe.state', subject_type: 'scribe', subject_id: t.scribe.id, detail: 'powered_off' },
        { actor_type: 'user', actor_label: admin.email, action: 'scribe.state', subject_type: 'scribe', subject_id: t.scribe.id, detail: 'active' },
      ]);
    });

    it('refuses an unknown state with a message and changes nothing', async () => {
      const res = await admin.post(`/b/${t.scribe.slug}/state`, { state: 'asleep' });
      expect([res.status, res.headers.location]).to.deep.equal([303, `/b/${t.scribe.slug}/settings`]);
      expect((await admin.get(`/b/${t.scribe.slug}/settings`)).text).to.include('State must be one of active, powered_off, unprovisioned');
      expect((await h.db('scribes').where({ id: t.scribe.id }).first()).state).to.equal('active');
    });

    it('serves a favicon without a sign-in, and pages link it', async () => {
      const ico = await h.api.get('/favicon.ico');
      expect([ico.status, ico.headers.location]).to.deep.equal([301, '/assets/favicon.svg']);
      const svg = await h.api.get('/assets/favicon.svg');
      expect(svg.status).to.equal(200);
      expect(svg.headers['content-type']).to.match(/^image\/svg\+xml/);
      expect((await h.api.get('/login')).text).to.include('<link rel="icon" href="/assets/favicon.svg" type="image/svg+xml">');
    });

    it('edits the agent and instructions', async () => {
      await admin.post(`/b/${t.scribe.slug}/agent`, { agent: 'openai', instructions: 'Be brief.' });
      expect(await h.db('scribes').where({ id: t.scribe.id }).first()).to.include({ agent: 'openai', instructions: 'Be brief.' });
      await admin.post(`/b/${t.scribe.slug}/agent`, { agent: 'builtin', instructions: '' });
      const res = await admin.post(`/b/${t.scribe.slug}/agent`, { agent: 'gpt', instructions: '' });
      expect([res.status, res.headers.location]).to.deep.equal([303, `/b/${t.scribe.slug}/settings`]);
      expect((await admin.get(`/b/${t.scribe.slug}/settings`)).text).to.include('Agent must be one of builtin, openai');
      expect((await h.db('scribes').where({ id: t.scribe.id }).first()).agent).to.equal('builtin');
    });

    it("sets the openai agent's model settings, keeps a key it never shows, and removes it on request", async () => {
      const key = 'sk-console-secret-5511';
      const save = (form: Record<string, string>) =>
        admin.post(`/b/${t.scribe.slug}/agent`, { agent: 'openai', instructions: '', model: '', base_url: '', api_key: '', max_tool_rounds: '', token_budget: '', ...form });
      await save({ model: 'llama3.2', base_url: 'https://models.example.com/v1', api_key: key, vision: 'on', max_tool_rounds: '4', token_budget: '20000' });
      const row = async () => {
        const scribe = await h.db('scribes').where({ id: t.scribe.id }).first();
        // Stored sealed; opened here to compare.
        return { ...scribe, model_api_key: scribe.model_api_key && h.services.secrets.open(scribe.model_api_key) };
      };
      expect(await row()).to.include({ model: 'llama3.2', model_base_url: 'https://models.example.com/v1', model_api_key: key, max_tool_rounds: 4, token_budget: 20000 });
      const page = (await admin.get(`/b/${t.scribe.slug}/settings`)).text;
      expect(page).not.to.include(key);
      expect(page).to.include('(one is set; it is never shown: leave empty to keep it)');
      await save({ model: 'llama3.2' });
      expect(await row(), 'an empty key field keeps the key').to.include({ model_api_key: key, token_budget: null });
      await save({ remove_api_key: 'on' });
      expect(await row()).to.include({ model_api_key: null, model: null });
      const refused = await save({ token_budget: '12' });
      expect(refused.status).to.equal(303);
      expect((await admin.get(`/b/${t.scribe.slug}/settings`)).text).to.include('Token budget must be a whole number from 100 to 10000000');
      await save({ agent: 'builtin' });
    });

    it('brings a refused agent form back as typed, the API key and MCP headers aside, and the next page as stored', async () => {
      const before = await h.db('scribes').where({ id: t.scribe.id }).first();
      const typed = {
        agent: 'openai',
        instructions: 'Answer in haiku.\nAlways <three> lines.',
        model: 'llama3.2',
        base_url: 'https://models.example.com/v1',
        api_key: 'sk-never-kept-4411',
        vision: 'on',
        max_tool_rounds: '99',
        token_budget: '5000',
        max_concurrency: '3',
      };
      expect((await admin.post(`/b/${t.scribe.slug}/agent`, typed)).status).to.equal(303);
      const page = (await admin.get(`/b/${t.scribe.slug}/settings`)).text;
      expect(page).to.include('Tool rounds must be a whole number from 1 to 50');
      expect(page).to.include('<option value="openai" selected>');
      expect(page).to.include('<textarea id="instructions" name="instructions" rows="4">Answer in haiku.\nAlways &lt;three&gt; lines.</textarea>');
      for (const [id, value] of [
        ['model', 'llama3.2'],
        ['base_url', 'https://models.example.com/v1'],
        ['max_tool_rounds', '99'],
        ['token_budget', '5000'],
        ['max_concurrency', '3'],
      ] as const)
        expect(page, id).to.match(new RegExp(`id="${id}" name="${id}"[^>]* value="${value.replace(/[.]/g, '\\.')}"`));
      expect(page).to.include('name="vision" checked').and.not.include('sk-never-kept-4411');
      expect(await h.db('scribes').where({ id: t.scribe.id }).first(), 'nothing saved').to.deep.equal(before);
      // Shown once: the next visit shows what is stored.
      const again = (await admin.get(`/b/${t.scribe.slug}/settings`)).text;
      expect(again).to.not.include('Answer in haiku.').and.not.include('Tool rounds must be');

      await admin.post(`/b/${t.scribe.slug}/mcp`, { url: 'ftp://tools.example.com/mcp', headers: 'Authorization: Bearer mcp-never-kept' });
      const mcp = (await admin.get(`/b/${t.scribe.slug}/settings`)).text;
      expect(mcp).to.include('value="ftp://tools.example.com/mcp"').and.include('never shown again: give them again').and.not.include('mcp-never-kept');
    });

    it('saves the most runs at once of the scribe (empty: no cap), refuses a bad one, and audits the change', async () => {
      const save = (maxConcurrency: string) => admin.post(`/b/${t.scribe.slug}/agent`, { agent: 'builtin', instructions: '', max_concurrency: maxConcurrency });
      expect((await save('12')).status).to.equal(303);
      expect(await h.db('scribes').where({ id: t.scribe.id }).first()).to.include({ max_concurrency: 12 });
      expect((await admin.get(`/b/${t.scribe.slug}/settings`)).text).to.include('id="max_concurrency" name="max_concurrency" inputmode="numeric" value="12"');
      expect((await audit()).at(-1)).to.include({ action: 'scribe.agent', subject_id: t.scribe.id, actor_label: admin.email });
      await save('0');
      expect((await admin.get(`/b/${t.scribe.slug}/settings`)).text).to.include('Max concurrency must be a whole number from 1 to 10000');
      expect(await h.db('scribes').where({ id: t.scribe.id }).first()).to.include({ max_concurrency: 12 });
      await save('');
      expect(await h.db('scribes').where({ id: t.scribe.id }).first()).to.include({ max_concurrency: null });
      // Digits only: what Number() would read as a number (hexadecimal, binary, exponents) is no whole number here.
      for (const written of ['0x10', '0b11', '1e3', '12.0', '+5']) {
        await save(written);
        expect((await admin.get(`/b/${t.scribe.slug}/settings`)).text, written).to.include('Max concurrency must be a whole number from 1 to 10000');
        expect(await h.db('scribes').where({ id: t.scribe.id }).first(), written).to.include({ max_concurrency: null });
      }
    });

    it('adds an MCP server with headers it never shows again, and removes it', async () => {
      await admin.post(`/b/${t.scribe.slug}/mcp`, { url: 'https://tools.example.com/mcp', headers: 'Authorization: Bearer mcp-console-secret\nX-Team: ops' });
      const page = (await admin.get(`/b/${t.scribe.slug}/settings`)).text;
      expect(page).to.include('https://tools.example.com/mcp').and.include('with Authorization, X-Team');
      expect(page).not.to.include('mcp-console-secret');
      const [server] = await h.services.mcpServers.list(t.scribe.id);
      expect(server!.headers).to.deep.equal({ Authorization: 'Bearer mcp-console-secret', 'X-Team': 'ops' });
      await admin.post(`/b/${t.scribe.slug}/mcp`, { url: 'ftp://tools.example.com/mcp', headers: '' });
      expect((await admin.get(`/b/${t.scribe.slug}/settings`)).text).to.include('MCP server URL must be an http:// or https:// URL without credentials, at most 2000 characters');
      expect(await h.services.mcpServers.list(t.scribe.id)).to.have.length(1);
      const viewer = await signIn(h, t, 'viewer');
      expect((await viewer.post(`/b/${t.scribe.slug}/mcp/${server!.id}/remove`, {})).status).to.equal(403);
      await admin.post(`/b/${t.scribe.slug}/mcp/${server!.id}/remove`, {});
      expect(await h.services.mcpServers.list(t.scribe.id)).to.deep.equal([]);
    });

    it('shows its sessions newest first with their transcripts, its receipts and its tasks', async () => {
      const first = await h.api.post(`/api/v1/scribes/${t.scribe.slug}/chat`).set(t.headers).send({ message: 'first question' });
      const second = await h.api.post(`/api/v1/scribes/${t.scribe.slug}/chat`).set(t.headers).send({ message: 'What are you working on?' });
      await h.services.runtime.tick();
      const page = (await admin.get(`/b/${t.scribe.slug}`)).text;
      expect(page.indexOf(second.body.session_id)).to.be.lessThan(page.indexOf(first.body.session_id));
      expect(page).to.include('first question').and.include('My tasks:');
      expect(page).to.include('data-live="always"');
    });
  });

  describe('receipts', () => {
    it('lists receipts with filters by status, scribe and time, and pages through them', async () => {
      const other = await h.services.scribes.create({ organizationId: t.organizationId, slug: 'second', name: 'Second' });
      for (let i = 0; i < 30; i++) await receipt({ summary: `bulk ${i}`, acceptance_criteria: 'ok' });
      await h.services.requests.submit(other, { task: { summary: 'for second' } });
      const all = await admin.get('/receipts');
      expect(all.text.match(/href="\/receipts\/req_/g)).to.have.length(25);
      const next = /href="(\/receipts\?before=[^"]+)"/.exec(all.text)![1]!.replace(/&amp;/g, '&');
      const page2 = await admin.get(next);
      expect(page2.status).to.equal(200);
      const ids1 = [...all.text.matchAll(/href="\/receipts\/(req_\w+)"/g)].map((m) => m[1]);
      const ids2 = [...page2.text.matchAll(/href="\/receipts\/(req_\w+)"/g)].map((m) => m[1]);
      expect(
        ids1.filter((id) => ids2.includes(id)),
        'no receipt on both pages',
      ).to.deep.equal([]);
      expect((await admin.get('/receipts?scribe=second')).text)
        .to.include('for second')
        .and.not.include('bulk 1<');
      expect((await admin.get('/receipts?status=failed')).text).to.include('No receipts match.');
      expect((await admin.get('/receipts?status=accepted&since=1h')).text).to.include('bulk 29');
      expect((await admin.get('/receipts?before=not-a-cursor')).status).to.equal(400);
    });

    it('shows a receipt with its input, timeline, task and attachments, downloadable by signed-in staff only', async () => {
      const files = await startFileServer({ '/report.csv': (_req, res) => res.writeHead(200, { 'content-type': 'text/csv' }).end('a,b\n1,2\n') });
      try {
        const id = await receipt({ summary: 'Read the report', acceptance_criteria: 'A summary', attachments: [{ url: `${files.url}/report.csv`, content_type: 'text/csv' }] });
        await h.services.dispatcher.tick();
        const page = await admin.get(`/receipts/${id}`);
        expect(page.text).to.include('Read the report').and.include('A summary').and.include('report.csv').and.include('badge-ok">fulfilled');
        expect(page.text.match(/<li><span class="badge[^"]*">(accepted|dispatched|fulfilled)<\/span>/g)).to.have.length(3);
        const file = await admin.get(`/receipts/${id}/attachments/0`);
        expect(file.status).to.equal(200);
        expect(file.headers['content-disposition']).to.equal('attachment; filename=report.csv');
        expect(file.headers['content-type']).to.match(/^text\/csv/);
        expect(file.text ?? file.body.toString()).to.equal('a,b\n1,2\n');
        expect((await admin.get(`/receipts/${id}/attachments/1`)).status).to.equal(404);
        const anonymous = await h.api.get(`/receipts/${id}/attachments/0`);
        expect(anonymous.status).to.equal(303);
      } finally {
        await files.close();
      }
    });

    it('serves a stored file with a safe type and name whatever the database holds (rows from before the checks)', async () => {
      const files = await startFileServer({ '/x.txt': (_req, res) => res.writeHead(200).end('hello') });
      try {
        const id = await receipt({ summary: 'Old row', attachments: [{ url: `${files.url}/x.txt`, content_type: 'text/plain' }] });
        await h.db('attachments').where({ request_id: id }).update({ content_type: 'text/plain\r\nX-Injected: 1', filename: 'invoice\u202Efdp.exe' });
        const file = await admin.get(`/receipts/${id}/attachments/0`);
        expect(file.status).to.equal(200);
        expect(file.headers['content-type']).to.equal('application/octet-stream');
        expect(file.headers).to.not.have.property('x-injected');
        expect(file.headers['content-disposition']).to.equal('attachment; filename=invoicefdp.exe');
      } finally {
        await files.close();
      }
    });
  });

  describe('tasks and sessions', () => {
    it('gives input to a waiting task from its page; the agent then finishes it', async () => {
      const id = await receipt({ summary: 'Which supplier should we drop?' });
      await h.services.dispatcher.tick();
      await h.services.runtime.tick();
      const task = await h.db('tasks').where({ request_id: id }).first();
      expect(task.status).to.equal('waiting');
      expect((await admin.get(`/tasks/${task.id}`)).text).to.include('Answer the scribe');
      const res = await admin.post(`/tasks/${task.id}/input`, { text: 'The most expensive one' });
      expect(res.status).to.equal(303);
      expect((await h.db('tasks').where({ id: task.id }).first()).status).to.equal('open');
      await h.services.runtime.tick();
      const page = await admin.get(`/tasks/${task.id}`);
      expect(page.text).to.include('Input from staff: The most expensive one').and.include('badge-ok">done');
      expect((await audit()).at(-1)).to.include({ action: 'task.input', subject_id: task.id, actor_label: admin.email });
      // Input typed in a second tab, sent after the first: refused, and what was typed is shown to copy.
      const again = await admin.post(`/tasks/${task.id}/input`, { text: 'A long answer <b>typed</b> in vain' });
      expect(again.status).to.equal(303);
      const refused = (await admin.get(`/tasks/${task.id}`)).text;
      expect(refused).to.include('Task is not waiting').and.include('<pre class="pre" id="not-sent">A long answer &lt;b&gt;typed&lt;/b&gt; in vain</pre>');
      expect(refused).not.to.include('Answer the scribe');
      // Shown once, as the message is.
      expect((await admin.get(`/tasks/${task.id}`)).text).not.to.include('id="not-sent"');
    });

    it('lets staff reply to a waiting session from its transcript', async () => {
      const chat = await h.api.post(`/api/v1/scribes/${t.scribe.slug}/chat`).set(t.headers).send({ message: 'hi' });
      await h.services.runtime.tick();
      const id = chat.body.session_id;
      expect((await admin.get(`/sessions/${id}`)).text).to.include('Reply as staff');
      await admin.post(`/sessions/${id}/reply`, { text: 'What are you working on?' });
      await h.services.runtime.tick();
      const page = (await admin.get(`/sessions/${id}`)).text;
      expect(page).to.include('msg-staff').and.include('My tasks:');
      expect((await h.db('session_messages').where({ session_id: id })).map((m) => m.author)).to.deep.equal(['user', 'scribe', 'staff', 'scribe']);
      const empty = await admin.post(`/sessions/${id}/reply`, { text: '   ' });
      expect(empty.status).to.equal(303);
      expect((await admin.get(`/sessions/${id}`)).text).to.include('Reply is required');
      // A reply to a session closed meanwhile: refused, and what was typed is shown to copy.
      await h.services.sessions.cancel(staffOf(t), id);
      await admin.post(`/sessions/${id}/reply`, { text: 'Are you still there?' });
      const closed = (await admin.get(`/sessions/${id}`)).text;
      expect(closed).to.include('Only a session waiting for a reply can be answered').and.include('<pre class="pre" id="not-sent">Are you still there?</pre>');
    });
  });

  describe('keys', () => {
    it('creates a key shown once, which then works, and revokes it', async () => {
      const res = await admin.post('/keys', { name: 'Console key' });
      expect(res.status).to.equal(200);
      expect(res.headers['cache-control']).to.equal('no-store');
      const key = /<code class="key" id="new-key">(sk_[A-Za-z0-9_-]+)<\/code>/.exec(res.text)![1]!;
      expect((await h.api.get(`/api/v1/scribes/${t.scribe.slug}/requests`).set('X-Api-Key', key)).status).to.equal(200);
      const list = await admin.get('/keys');
      expect(list.text).to.include('Console key').and.not.include(key);
      const row = await h.db('api_keys').where({ name: 'Console key' }).first();
      expect(row.key_hash).to.not.equal(key);
      const revoke = await admin.post(`/keys/${row.id}/revoke`);
      expect(revoke.status).to.equal(303);
      expect((await h.api.get(`/api/v1/scribes/${t.scribe.slug}/requests`).set('X-Api-Key', key)).status).to.equal(401);
      expect((await audit()).slice(-2).map((e) => e.action)).to.deep.equal(['key.create', 'key.revoke']);
    });

    it('refuses a key name over 200 characters on the same form, the name kept, and makes no key', async () => {
      const before = await h.db('api_keys').count({ n: '*' }).first();
      const name = `${'k'.repeat(200)}<b>`;
      const res = await admin.post('/keys', { name });
      expect(res.status).to.equal(422);
      expect(res.text).to.include('<p class="flash flash-error" role="alert">Name must be at most 200 characters</p>');
      expect(res.text)
        .to.include(`value="${'k'.repeat(200)}&lt;b&gt;"`)
        .and.not.include('id="new-key"');
      expect(await h.db('api_keys').count({ n: '*' }).first()).to.deep.equal(before);
    });
  });

  describe('entries', () => {
    it('brings a refused entry type or entry back as typed, and saves nothing', async () => {
      const types = await h.db('entry_types').count({ n: '*' }).first();
      await admin.post('/entry-types', { name: 'Suppliers & co', name_0: 'Name', type_0: 'text', primary: '1', name_1: 'Rating', type_1: 'number', name_2: 'a|b', type_2: 'date' });
      const form = (await admin.get('/entry-types')).text;
      expect(form).to.include('Field name &#34;a|b&#34; may not contain');
      expect(form).to.include('name="name" required maxlength="200" value="Suppliers &amp; co"');
      expect(form).to.include('aria-label="Field 2 name" maxlength="100" value="Rating"').and.include('aria-label="Field 3 name" maxlength="100" value="a|b"');
      expect(form).to.match(/name="type_2" aria-label="Field 3 type">(?:<option value="\w+">\w+<\/option>)*<option value="date" selected>/);
      expect(form).to.include('name="primary" value="1" aria-label="Field 2 is primary" checked');
      expect(await h.db('entry_types').count({ n: '*' }).first()).to.deep.equal(types);

      await admin.post('/entry-types', { name: 'Depots', name_0: 'Name', type_0: 'text', primary: '0', name_1: 'Size', type_1: 'number', name_2: 'Open', type_2: 'boolean' });
      const depots = await h.db('entry_types').where({ organization_id: t.organizationId, name: 'Depots' }).first();
      await admin.post(`/entry-types/${depots.id}/entries`, { f_0: 'North & East', f_1: 'lots', f_2: 'true', draft: '1' });
      const entry = (await admin.get(`/entry-types/${depots.id}/new`)).text;
      expect(entry).to.include('Field &#34;Size&#34; must be a number');
      expect(entry).to.include('name="f_0" type="text" value="North &amp; East"').and.include('name="f_1" type="number" step="any" value="lots"');
      expect(entry).to.include('<option value="true" selected>yes</option>').and.include('name="draft" value="1" checked');
      expect(await h.db('entries').where({ entry_type_id: depots.id })).to.have.length(0);
    });

    it('creates an entry type and entries, edits one, and shows relationships as links', async () => {
      await admin.post('/entry-types', { name: 'Firms', name_0: 'Name', type_0: 'text', primary: '0', name_1: 'Size', type_1: 'number' });
      const firms = await h.db('entry_types').where({ organization_id: t.organizationId, name: 'Firms' }).first();
      expect(firms).to.not.equal(undefined);
      await admin.post('/entry-types', { name: 'People', name_0: 'Name', type_0: 'text', primary: '0', name_1: 'Firm', type_1: 'relationship', target_1: firms.id });
      const people = await h.db('entry_types').where({ organization_id: t.organizationId, name: 'People' }).first();

      const created = await admin.post(`/entry-types/${firms.id}/entries`, { f_0: 'Globex', f_1: '120' });
      expect(created.status).to.equal(303);
      const firmId = String(created.headers.location).split('/').pop()!;
      expect(JSON.parse((await h.db('entries').where({ id: firmId }).first()).fields)).to.deep.equal({ Name: 'Globex', Size: 120 });

      const form = await admin.get(`/entry-types/${people.id}/new`);
      expect(form.text).to.include(`data-options="/entry-types/${firms.id}/options"`);
      const person = await admin.post(`/entry-types/${people.id}/entries`, { f_0: 'Hank', f_1: [firmId] });
      const personId = String(person.headers.location).split('/').pop()!;
      const page = await admin.get(`/entries/${personId}`);
      expect(page.text).to.include(`<a href="/entries/${firmId}">Globex</a>`);

      await admin.post(`/entries/${firmId}`, { f_0: 'Globex Corp', f_1: '', draft: '1' });
      const edited = await h.db('entries').where({ id: firmId }).first();
      expect(JSON.parse(edited.fields)).to.deep.equal({ Name: 'Globex Corp' });
      expect(edited.draft).to.equal(stored(true));
      expect((await audit()).slice(-5).map((e) => e.action)).to.deep.equal(['entry_type.create', 'entry_type.create', 'entry.create', 'entry.create', 'entry.update']);
    });

    it("searches entries with the API's q, with draft and archived toggles, and says when a query is malformed", async () => {
      const type = await h.services.entryTypes.create(t.organizationId, {
        name: 'Cities',
        fields: [
          { name: 'Name', type: 'text', primary: true },
          { name: 'Pop', type: 'number' },
        ],
      });
      await h.services.entries.create(t.organizationId, type.id, { fields: { Name: 'Zurich', Pop: 400 } });
      await h.services.entries.create(t.organizationId, type.id, { fields: { Name: 'Geneva', Pop: 200 } });
      await h.services.entries.create(t.organizationId, type.id, { fields: { Name: 'Bern draft', Pop: 130 }, draft: true });
      const search = async (query: string) => (await admin.get(`/entry-types/${type.id}?${query}`)).text;
      const names = (html: string) => [...html.matchAll(/<a href="\/entries\/[^"]+">([^<]+)<\/a>/g)].map((m) => m[1]);
      expect(names(await search(''))).to.deep.equal(['Zurich', 'Geneva']);
      expect(names(await search('q=Pop%3E300'))).to.deep.equal(['Zurich']);
      expect(names(await search('q=bern'))).to.deep.equal([]);
      expect(names(await search('q=bern&drafts=1'))).to.deep.equal(['Bern draft']);
      expect(await search('q=Pop%3Elots')).to.include('Invalid search query:');
      // Given twice (a hand-made address), it is said, as the API says it, and lists nothing rather than every entry.
      const twice = await search('q=bern&q=Pop%3E300');
      expect(twice).to.include('Invalid search query: q is given more than once');
      expect(names(twice)).to.deep.equal([]);
    });

    it('lists the matches of one term of 1,000 one-letter words, and says beside the box that groups nest too deep', async () => {
      const type = await h.services.entryTypes.create(t.organizationId, { name: 'Rivers', fields: [{ name: 'Name', type: 'text', primary: true }] });
      await h.services.entries.create(t.organizationId, type.id, { fields: { Name: 'Rhine' } });
      await h.services.entries.create(t.organizationId, type.id, { fields: { Name: 'Aare' } });
      const words = await admin.get(`/entry-types/${type.id}?q=${Array(1000).fill('e').join('+')}`);
      expect(words.status).to.equal(200);
      expect([...words.text.matchAll(/<a href="\/entries\/[^"]+">([^<]+)<\/a>/g)].map((m) => m[1])).to.deep.equal(['Rhine', 'Aare']);
      const nested = await admin.get(`/entry-types/${type.id}?q=${'('.repeat(1999)}`);
      expect(nested.status).to.equal(200);
      expect(nested.text).to.include('Invalid search query: parentheses nested more than 100 deep at position 100');
    });

    it('renames an entry type and adds fields to it; existing fields and entries are kept', async () => {
      const type = await h.services.entryTypes.create(t.organizationId, { name: 'Vendors', fields: [{ name: 'Name', type: 'text', primary: true }] });
      const entry = await h.services.entries.create(t.organizationId, type.id, { fields: { Name: 'Initech' } });
      expect((await admin.get(`/entry-types/${type.id}/edit`)).status).to.equal(200);
      const res = await admin.post(`/entry-types/${type.id}`, { name: 'Suppliers', name_0: 'Rating', type_0: 'number' });
      expect(res.status).to.equal(303);
      const fields = await h.db('entry_type_fields').where({ entry_type_id: type.id }).orderBy('position').select('name', 'type', 'position', 'is_primary');
      expect(fields).to.deep.equal([
        { name: 'Name', type: 'text', position: 0, is_primary: stored(true) },
        { name: 'Rating', type: 'number', position: 1, is_primary: stored(false) },
      ]);
      expect((await h.db('entry_types').where({ id: type.id }).first()).name).to.equal('Suppliers');
      await admin.post(`/entries/${entry.id}`, { f_0: 'Initech', f_1: '4.5' });
      expect(JSON.parse((await h.db('entries').where({ id: entry.id }).first()).fields)).to.deep.equal({ Name: 'Initech', Rating: 4.5 });

      const dup = await admin.post(`/entry-types/${type.id}`, { name: 'Suppliers', name_0: 'rating', type_0: 'text' });
      expect(dup.headers.location).to.equal(`/entry-types/${type.id}/edit`);
      expect((await admin.get(String(dup.headers.location))).text).to.include('Field name &#34;rating&#34; is used twice');
      expect(await h.db('entry_type_fields').where({ entry_type_id: type.id })).to.have.length(2);
      expect((await audit()).at(-2)).to.include({ action: 'entry_type.update', subject_id: type.id, detail: 'Suppliers' });
    });

    it('refuses a field named __proto__, constructor or prototype, saying the name is reserved, and keeps nothing', async () => {
      for (const name of ['__proto__', 'constructor', 'prototype']) {
        const res = await admin.post('/entry-types', { name: `Reserved ${name}`, name_0: 'Name', type_0: 'text', primary: '0', name_1: name, type_1: 'text' });
        expect(res.headers.location).to.equal('/entry-types');
        expect((await admin.get('/entry-types')).text).to.include(`Field name &#34;${name}&#34; is reserved</p>`);
        expect(
          await h
            .db('entry_types')
            .where({ name: `Reserved ${name}` })
            .first(),
        ).to.equal(undefined);
      }
    });

    it('says what is wrong when an entry does not validate, and keeps nothing', async () => {
      const type = await h.services.entryTypes.create(t.organizationId, {
        name: 'Strict',
        fields: [
          { name: 'Name', type: 'text', primary: true },
          { name: 'Count', type: 'number' },
        ],
      });
      const res = await admin.post(`/entry-types/${type.id}/entries`, { f_0: 'X', f_1: 'many' });
      expect(res.status).to.equal(303);
      expect(res.headers.location).to.equal(`/entry-types/${type.id}/new`);
      expect((await admin.get(String(res.headers.location))).text).to.match(/flash-error[^>]*>[^<]*Count/);
      expect(await h.db('entries').where({ entry_type_id: type.id })).to.have.length(0);
    });
  });

  it('records API calls that change data in the audit log, naming the key', async () => {
    const id = await receipt({ summary: 'audited' });
    const chat = await h.api.post(`/api/v1/scribes/${t.scribe.slug}/chat`).set(t.headers).send({ message: 'audited' });
    const events = await audit();
    expect(events.find((e) => e.subject_id === id)).to.include({ actor_type: 'api_key', action: 'request.submit', detail: 'audited' });
    expect(events.find((e) => e.subject_id === chat.body.session_id)).to.include({ actor_type: 'api_key', action: 'session.start' });
    expect(events.find((e) => e.subject_id === id)!.actor_label).to.equal(`API key (${t.key.slice(0, 10)}…)`);
    const page = await admin.get('/audit');
    expect(page.text).to.include('request.submit').and.include('session.start');
  });
});
