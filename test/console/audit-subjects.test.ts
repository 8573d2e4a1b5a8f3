import { expect } from 'chai';
import { createHarness, staffOf, type Harness, type Tenant } from '../helpers/harness.js';
import { signIn, type ConsoleClient } from '../helpers/console.js';

describe('console: audit subjects by name', () => {
  let h: Harness;
  let t: Tenant;
  let admin: ConsoleClient;
  /** The subject cell of each row, by `type:id`. */
  let cells: Map<string, string>;
  const subjects: Record<string, string> = {};

  before(async () => {
    h = await createHarness({ env: { WEBHOOKS_ALLOW_PRIVATE: 'true' }, options: { dispatchOnAccept: false, runOnNewWork: false } });
    t = await h.tenant({ slug: 'atlas' });
    admin = await signIn(h, t, 'admin');
    const staff = staffOf(t);
    const record = (type: string, id: string) => h.services.audit.record(staff, `${type}.test`, { type, id });

    const submitted = await h.api
      .post('/api/v1/scribes/atlas/requests')
      .set(t.headers)
      .send({ task: { summary: 'Summarize Q3', title: 'Q3 summary' } });
    subjects.request = submitted.body.request.id;
    await h.services.dispatcher.tick();
    subjects.task = (await h.db('tasks').where({ request_id: subjects.request }).first()).id;
    await record('task', subjects.task!);
    const chat = await h.api.post('/api/v1/scribes/atlas/chat').set(t.headers).send({ message: 'Hello' });
    subjects.session = chat.body.session_id;
    await record('session', subjects.session!);
    await record('scribe', t.scribe.id);
    subjects.schedule = (await h.services.schedules.create(staff, 'atlas', { cron: '0 9 * * *', summary: 'Write the morning report', title: 'Morning report' })).id;
    subjects.channel = (await h.services.channels.create(staff, 'atlas', { kind: 'webhook', name: 'Support form' })).channel.id;
    subjects.webhook = (await h.services.webhooks.create(staff, { url: 'http://127.0.0.1:9/hook', description: 'Billing hook' })).endpoint.id;
    const gone = (await h.services.webhooks.create(staff, { url: 'http://127.0.0.1:9/old' })).endpoint.id;
    await h.services.webhooks.remove(staff, gone);
    subjects.gone = gone;
    await record('api_key', t.keyId);
    const type = await h.services.entryTypes.create(t.organizationId, { name: 'Companies', fields: [{ name: 'Name', type: 'text', primary: true }] });
    subjects.entry_type = type.id;
    await record('entry_type', type.id);
    subjects.entry = (await h.services.entries.create(t.organizationId, type.id, { fields: { Name: 'Acme Corp' } })).id;
    await record('entry', subjects.entry!);
    subjects.user = (await h.db('users').where({ organization_id: t.organizationId }).first()).id;
    await record('user', subjects.user!);
    // Another organization's scribe, named in an event of ours: not ours to name.
    const other = await h.tenant({ slug: 'zeta' });
    subjects.foreign = other.scribe.id;
    await record('scribe', other.scribe.id);

    const res = await admin.get('/audit');
    expect(res.status).to.equal(200);
    cells = new Map();
    for (const row of res.text.matchAll(/<td class="subject">([\s\S]*?)<\/td>/g)) {
      const history = /subject_type=([a-z_]+)&amp;subject_id=([^"]+)"/.exec(row[1]!)!;
      cells.set(
        `${history[1]}:${history[2]}`,
        row[1]!
          .replace(/\s*<a class="hint" href="\/audit[\s\S]*$/, '')
          .replace(/\s+/g, ' ')
          .trim(),
      );
    }
  });
  after(() => h.close());

  const cell = (type: string, id: string) => {
    const found = cells.get(`${type}:${id}`);
    expect(found, `${type}:${id}`).to.be.a('string');
    return found!;
  };
  const named = (label: string, href: string, id: string, name: string) => `<span class="hint">${label}</span> <a href="${href}" title="${id}">${name}</a>`;

  it('names each subject and links it to its console page', () => {
    expect(cell('request', subjects.request!)).to.equal(named('request', `/receipts/${subjects.request}`, subjects.request!, 'Q3 summary'));
    expect(cell('task', subjects.task!)).to.equal(named('task', `/tasks/${subjects.task}`, subjects.task!, 'Q3 summary'));
    expect(cell('session', subjects.session!)).to.equal(named('session', `/sessions/${subjects.session}`, subjects.session!, 'chat with atlas'));
    expect(cell('scribe', t.scribe.id)).to.equal(named('scribe', '/b/atlas', t.scribe.id, 'atlas'));
    expect(cell('schedule', subjects.schedule!)).to.equal(named('schedule', `/schedules/${subjects.schedule}`, subjects.schedule!, 'Morning report'));
    expect(cell('channel', subjects.channel!)).to.equal(named('channel', `/channels/${subjects.channel}`, subjects.channel!, 'Support form'));
    expect(cell('webhook', subjects.webhook!)).to.equal(named('webhook', `/webhooks/${subjects.webhook}`, subjects.webhook!, 'Billing hook'));
    expect(cell('api_key', t.keyId)).to.match(new RegExp(`^<span class="hint">api key</span> <a href="/keys" title="${t.keyId}">[^<]+ \\(sk_[^<]+\\)</a>$`));
    expect(cell('entry_type', subjects.entry_type!)).to.equal(named('entry type', `/entry-types/${subjects.entry_type}`, subjects.entry_type!, 'Companies'));
    expect(cell('entry', subjects.entry!)).to.equal(named('entry', `/entries/${subjects.entry}`, subjects.entry!, 'Acme Corp'));
  });

  it('names a subject without a page of its own, unlinked', () => {
    expect(cell('user', subjects.user!)).to.equal(`<span class="hint">user</span> <span title="${subjects.user}">${admin.email}</span>`);
  });

  it('shows a subject no longer found by its id and "(deleted)", unlinked, and never names another organization\'s', () => {
    const deleted = (label: string, id: string) => `<span class="hint">${label}</span> <span class="mono">${id}</span> <span class="hint">(deleted)</span>`;
    expect(cell('webhook', subjects.gone!)).to.equal(deleted('webhook', subjects.gone!));
    expect(cell('scribe', subjects.foreign!)).to.equal(deleted('scribe', subjects.foreign!));
  });

  it('reads the names in the same queries for one event as for many', async () => {
    let count = 0;
    const listener = () => count++;
    const queriesFor = async (query: string) => {
      count = 0;
      h.db.on('query', listener);
      try {
        expect((await admin.get(`/audit${query}`)).status).to.equal(200);
      } finally {
        h.db.off('query', listener);
      }
      return count;
    };
    const one = await queriesFor(`?subject_type=entry&subject_id=${subjects.entry}`);
    for (let i = 0; i < 20; i++) {
      const entry = await h.services.entries.create(t.organizationId, subjects.entry_type!, { fields: { Name: `Entry ${i}` } });
      await h.services.audit.record(staffOf(t), 'entry.test', { type: 'entry', id: entry.id });
    }
    expect(await queriesFor('?subject_type=entry')).to.equal(one);
  });
});
