import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { signIn, type ConsoleClient } from '../helpers/console.js';

/** The actions of a page's forms that change something (signing out aside). */
const postActions = (html: string) => [...html.matchAll(/<form[^>]*method="post"[^>]*action="([^"]+)"/g)].map((m) => m[1]).filter((a) => a !== '/logout');

describe("console: a scribe's page in two tabs, Activity and Settings", () => {
  let h: Harness;
  let t: Tenant;
  let admin: ConsoleClient;
  let viewer: ConsoleClient;
  let ids: { receiptId: string; taskId: string; sessionId: string };
  before(async () => {
    h = await createHarness({ options: { runOnNewWork: false, dispatchOnAccept: false } });
    t = await h.tenant();
    [admin, viewer] = await Promise.all([signIn(h, t, 'admin'), signIn(h, t, 'viewer')]);
    const submit = await h.api
      .post('/api/v1/scribes/atlas/requests')
      .set(t.headers)
      .send({ task: { title: 'Compare the vendors', summary: 'Which vendor is cheapest?' } });
    await h.services.dispatcher.tick();
    const chat = await h.api.post('/api/v1/scribes/atlas/chat').set(t.headers).send({ message: 'What are you working on?' });
    const task = await h.db('tasks').where({ request_id: submit.body.request.id }).first('id');
    ids = { receiptId: submit.body.request.id, taskId: task.id, sessionId: chat.body.session_id };
  });
  after(() => h.close());

  const ACTIVITY_TABS = '<li><a href="/b/atlas" aria-current="page">Activity</a></li>\n    \n      <li><a href="/b/atlas/settings">Settings</a></li>';
  const SETTINGS_TABS = '<li><a href="/b/atlas">Activity</a></li>\n    \n      <li><a href="/b/atlas/settings" aria-current="page">Settings</a></li>';

  describe('Activity (/b/<slug>)', () => {
    it('opens on Activity: its latest session, receipt and task, each linked with its status and time, and no settings', async () => {
      const res = await admin.get('/b/atlas');
      expect(res.status).to.equal(200);
      expect(res.text).to.include('<title>atlas · Scribe</title>').and.include('<nav class="tabs" aria-label="Scribe">').and.include(ACTIVITY_TABS);
      expect(res.text).to.include('<main id="main" data-live="always">');
      expect(res.text)
        .to.include(`<details class="session-details" id="session-${ids.sessionId}" open>`)
        .and.include(`<a href="/sessions/${ids.sessionId}">Open the session →</a>`);
      expect(res.text).to.include('<span class="badge badge-busy">queued</span>\n\n                <span class="session-first">What are you working on?</span>');
      expect(res.text).to.include(`<a href="/receipts/${ids.receiptId}">Compare the vendors</a>`).and.include(`<a href="/tasks/${ids.taskId}">Compare the vendors</a>`);
      expect(res.text)
        .to.include('<td class="status-col"><span class="badge badge-ok">fulfilled</span>\n</td>')
        .and.include('<td class="status-col"><span class="badge badge-busy">open</span>\n</td>');
      // The session's start and its message's, the receipt's and the task's creation and last change.
      expect(res.text.match(/<time datetime="[^"]+" title="[^"]+ UTC">just now<\/time>/g)).to.have.length(6);
      expect(postActions(res.text)).to.deep.equal([]);
      expect(res.text).not.to.include('Save agent').and.not.include('New schedule').and.not.include('Tools (MCP servers)');
    });

    it('links "All … of this scribe" to the lists filtered to it, which hold the same items', async () => {
      const page = (await admin.get('/b/atlas')).text;
      for (const [list, heading, id] of [
        ['sessions', 'Latest sessions', ids.sessionId],
        ['receipts', 'Latest receipts', ids.receiptId],
        ['tasks', 'Latest tasks', ids.taskId],
      ] as const) {
        expect(page).to.include(`>${heading} <a class="hint" href="/${list}?scribe=atlas">All ${list} of this scribe →</a></h2>`);
        const all = await admin.get(`/${list}?scribe=atlas`);
        expect(all.status, list).to.equal(200);
        expect(all.text, list).to.include(`href="/${list}/${id}"`);
      }
    });

    it('says "No … yet" for each list, and of its chart, for a scribe that has done nothing', async () => {
      await h.services.scribes.create({ organizationId: t.organizationId, slug: 'quiet', name: 'Quiet' });
      const page = (await admin.get('/b/quiet')).text;
      expect([...page.matchAll(/<p class="empty-title">([^<]+)<\/p>/g)].map((m) => m[1])).to.deep.equal([
        'No chat sessions yet.',
        'No receipts yet.',
        'No tasks yet.',
        'No receipts in the last 24 hours.',
      ]);
      expect(page).not.to.match(/href="\/(sessions|receipts|tasks)\//);
    });

    it('refreshes its state, sessions, receipts and tasks in place', async () => {
      const res = await admin.agent.get('/b/atlas').set('X-Live-Refresh', '1');
      expect([...res.text.matchAll(/data-live-part="([a-z]+)"/g)].map((m) => m[1])).to.deep.equal(['state', 'sessions', 'receipts', 'tasks']);
    });
  });

  describe('Settings (/b/<slug>/settings)', () => {
    it('holds the name, state, agent and MCP forms, the schedules and channels, and does not refresh itself', async () => {
      const res = await admin.get('/b/atlas/settings');
      expect(res.status).to.equal(200);
      expect(res.text).to.include('<title>Settings of atlas · Scribe</title>').and.include('<h1>atlas <span class="hint">/b/atlas</span></h1>').and.include(SETTINGS_TABS);
      expect(res.text).to.include('<main id="main">');
      expect(postActions(res.text)).to.deep.equal(['/b/atlas/name', '/b/atlas/state', '/b/atlas/agent', '/b/atlas/mcp']);
      expect(res.text).to.include('<a class="hint" href="/b/atlas/schedules/new">New schedule</a>').and.include('<a class="hint" href="/b/atlas/channels/new">New channel</a>');
      expect(res.text).not.to.include(ids.sessionId).and.not.include(ids.receiptId).and.not.include('data-live-part="sessions"');
    });

    it('answers 404 "Not found" for a slug of no scribe of the organization', async () => {
      const res = await admin.get('/b/nobody/settings');
      expect(res.status).to.equal(404);
      expect(res.text).to.include('Not found');
    });

    it('brings every settings form back to Settings with its message, done or refused', async () => {
      const notice = (text: string) => `<p class="flash flash-notice" role="status">${text}</p>`;
      const error = (text: string) => `<p class="flash flash-error" role="alert">${text}</p>`;
      const forms: Array<[string, Record<string, string>, string]> = [
        ['/b/atlas/name', { name: 'Atlas' }, notice('Renamed to Atlas.')],
        ['/b/atlas/name', { name: ' ' }, error('Name is required')],
        ['/b/atlas/state', { state: 'powered_off' }, notice('atlas is now powered off.')],
        ['/b/atlas/state', { state: 'asleep' }, error('State must be one of active, powered_off, unprovisioned')],
        ['/b/atlas/state', { state: 'active' }, notice('atlas is now active.')],
        ['/b/atlas/agent', { agent: 'builtin', instructions: 'Be brief.' }, notice('Agent settings saved.')],
        ['/b/atlas/agent', { agent: 'gpt', instructions: '' }, error('Agent must be one of builtin, openai')],
        [
          '/b/atlas/mcp',
          { url: 'https://tools.example.com/mcp', headers: '' },
          notice('MCP server https://tools.example.com/mcp added: its tools are offered to the openai agent.'),
        ],
        [
          '/b/atlas/mcp',
          { url: 'ftp://tools.example.com/mcp', headers: '' },
          error('MCP server URL must be an http:// or https:// URL without credentials, at most 2000 characters'),
        ],
      ];
      for (const [path, form, message] of forms) {
        const res = await admin.post(path, form);
        expect([res.status, res.headers.location], path).to.deep.equal([303, '/b/atlas/settings']);
        const page = (await admin.get(res.headers.location!)).text;
        expect(page, `${path} ${JSON.stringify(form)}`)
          .to.include(message)
          .and.include(SETTINGS_TABS);
      }
      const [server] = await h.services.mcpServers.list(t.scribe.id);
      const removed = await admin.post(`/b/atlas/mcp/${server!.id}/remove`, {});
      expect([removed.status, removed.headers.location]).to.deep.equal([303, '/b/atlas/settings']);
      expect((await admin.get('/b/atlas/settings')).text)
        .to.include(notice('MCP server removed.'))
        .and.include('<p class="hint">None.</p>');
      expect(await h.db('scribes').where({ id: t.scribe.id }).first()).to.include({ name: 'Atlas', state: 'active', agent: 'builtin', instructions: 'Be brief.' });
    });
  });

  it('shows viewers the same activity and the settings read only', async () => {
    await h.services.scribes.setAgent(t.organizationId, 'atlas', { agent: 'builtin', instructions: 'Answer in French.' });
    const activity = await viewer.get('/b/atlas');
    expect(activity.status).to.equal(200);
    expect(activity.text).to.include(`href="/sessions/${ids.sessionId}"`).and.include(`href="/receipts/${ids.receiptId}"`).and.include(`href="/tasks/${ids.taskId}"`);
    const settings = await viewer.get('/b/atlas/settings');
    expect(settings.status).to.equal(200);
    expect(settings.text).to.include(SETTINGS_TABS);
    expect(postActions(settings.text)).to.deep.equal([]);
    expect(settings.text).to.include('<dt>Agent</dt><dd>builtin</dd><dt>Instructions</dt><dd class="pre">Answer in French.</dd>');
    expect(settings.text).not.to.include('New schedule').and.not.include('New channel');
  });
});
