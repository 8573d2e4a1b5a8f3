import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { signIn, type ConsoleClient } from '../helpers/console.js';
import { startFileServer } from '../helpers/file-server.js';
import { BULK_MAX } from '../../src/console/routes/failures.js';

/**
 * Acting on failures from the console: retry and discard of one failed receipt, task or
 * session, and of every failure a filtered list selects (preview, then confirmation).
 * Failures are made by writing what the dispatcher and runtime write when they fail.
 */
describe('console: retry and discard failures', () => {
  let h: Harness;
  let t: Tenant;
  let admin: ConsoleClient;
  let viewer: ConsoleClient;
  before(async () => {
    h = await createHarness({ env: { ATTACHMENTS_ALLOW_PRIVATE: 'true' }, options: { runOnNewWork: false, dispatchOnAccept: false } });
    t = await h.tenant();
    admin = await signIn(h, t, 'admin');
    viewer = await signIn(h, t, 'viewer');
  });
  after(() => h.close());

  /** What staff did to a subject, as the audit log records it (the API key's own events left out). */
  const auditOf = (subjectId: string) =>
    h
      .db('audit_events')
      .where({ organization_id: t.organizationId, subject_id: subjectId, actor_type: 'user' })
      .orderBy('id')
      .select('actor_label', 'action', 'subject_type', 'detail');

  async function submit(task: object, tenant = t): Promise<string> {
    const res = await h.api.post(`/api/v1/scribes/${tenant.scribe.slug}/requests`).set(tenant.headers).send({ task });
    expect(res.status).to.equal(202);
    return res.body.request.id;
  }

  /** What the dispatcher writes when it gives up on a receipt. */
  async function failedReceipt(task: object = { summary: 'Summarize the Acme account' }, tenant = t): Promise<string> {
    const id = await submit(task, tenant);
    const at = new Date().toISOString();
    await h.db('requests').where({ id }).update({ status: 'failed', error_message: 'Dispatch failed after 5 attempts', completed_at: at, updated_at: at });
    return id;
  }

  /** What the runtime writes when the agent fails a task: waiting, with the reason. */
  async function failedTask(summary = 'Draft the memo'): Promise<string> {
    const id = await submit({ summary });
    await h.services.dispatcher.tick();
    const task = await h.db('tasks').where({ request_id: id }).first('id');
    await h.db('tasks').where({ id: task.id }).update({ status: 'waiting', last_error: 'model endpoint answered 500' });
    return task.id;
  }

  /** What the runtime writes when the agent fails to answer a session. */
  async function failedSession(): Promise<string> {
    const res = await h.api.post(`/api/v1/scribes/${t.scribe.slug}/chat`).set(t.headers).send({ message: 'What do we know about Acme?' });
    const id = res.body.session_id;
    await h.db('sessions').where({ id }).update({ state: 'failed', reply_due: false, error_message: 'model endpoint answered 500' });
    return id;
  }

  describe('a failed receipt', () => {
    it('Retry makes a new receipt with the same input and files, linked both ways, audited; the new one is dispatched', async () => {
      const files = await startFileServer({ '/brief.txt': (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('the brief') });
      try {
        const old = await failedReceipt({
          title: 'Acme brief',
          summary: 'Summarize the Acme account',
          acceptance_criteria: 'Three bullets',
          attachments: [{ url: `${files.url}/brief.txt`, content_type: 'text/plain' }],
        });
        const page = await admin.get(`/receipts/${old}`);
        expect(page.text).to.include(`action="/receipts/${old}/retry"`).and.include(`action="/receipts/${old}/discard"`);

        const res = await admin.post(`/receipts/${old}/retry`);
        expect(res.status).to.equal(303);
        const made = await h.db('requests').where({ retry_of: old }).first();
        expect(res.headers.location).to.equal(`/receipts/${made.id}`);
        expect(made).to.include({
          status: 'accepted',
          title: 'Acme brief',
          summary: 'Summarize the Acme account',
          acceptance_criteria: 'Three bullets',
          scribe_id: t.scribe.id,
          organization_id: t.organizationId,
        });
        const [before, after] = await Promise.all(
          [old, made.id].map((id) => h.db('attachments').where({ request_id: id }).select('position', 'url', 'filename', 'sha256', 'size_bytes')),
        );
        expect(after).to.deep.equal(before).and.have.length(1);
        expect(await h.db('requests').where({ id: old }).first('status')).to.deep.equal({ status: 'failed' });

        const newPage = await admin.get(`/receipts/${made.id}`);
        expect(newPage.text).to.include('Retried as a new receipt.').and.include(`A retry of <a href="/receipts/${old}"`);
        const oldPage = await admin.get(`/receipts/${old}`);
        expect(oldPage.text).to.include(`Retried as <a href="/receipts/${made.id}"`).and.not.include(`action="/receipts/${old}/retry"`);
        expect(await auditOf(old)).to.deep.equal([{ actor_label: admin.email, action: 'request.retry', subject_type: 'request', detail: `retried as ${made.id}` }]);

        await h.services.dispatcher.tick();
        expect((await h.api.get(`/api/v1/requests/${made.id}`).set(t.headers)).body.request.status).to.equal('fulfilled');
      } finally {
        await files.close();
      }
    });

    it('is retried once: a second Retry (another admin, another tab) answers "This receipt has already been retried" and makes nothing', async () => {
      const old = await failedReceipt();
      await admin.post(`/receipts/${old}/retry`);
      const again = await admin.post(`/receipts/${old}/retry`);
      expect(again.status).to.equal(303);
      expect(again.headers.location).to.equal(`/receipts/${old}`);
      expect((await admin.get(`/receipts/${old}`)).text).to.include('This receipt has already been retried');
      expect(await h.db('requests').where({ retry_of: old }).count({ n: '*' }).first()).to.deep.equal({ n: 1 });
    });

    it('two retries at once make one receipt: the unique index decides', async () => {
      const old = await failedReceipt();
      const results = await Promise.allSettled([1, 2, 3].map(() => h.services.requests.retry({ type: 'user', id: null, label: 'x', organizationId: t.organizationId }, old)));
      expect(results.filter((r) => r.status === 'fulfilled')).to.have.length(1);
      for (const r of results.filter((r) => r.status === 'rejected')) expect((r as PromiseRejectedResult).reason.message).to.equal('This receipt has already been retried');
      expect(await h.db('requests').where({ retry_of: old }).count({ n: '*' }).first()).to.deep.equal({ n: 1 });
    });

    it('Retry of a receipt that did not fail answers "Only a failed receipt can be retried or discarded"', async () => {
      const id = await submit({ summary: 'Still in flight' });
      await admin.post(`/receipts/${id}/retry`);
      expect((await admin.get(`/receipts/${id}`)).text).to.include('Only a failed receipt can be retried or discarded');
      expect(await h.db('requests').where({ retry_of: id }).first()).to.equal(undefined);
    });

    it('Retry when the scribe is powered off answers "Scribe is not active" and makes nothing', async () => {
      const old = await failedReceipt();
      await h.services.scribes.setState(t.organizationId, t.scribe.slug, 'powered_off');
      try {
        await admin.post(`/receipts/${old}/retry`);
        expect((await admin.get(`/receipts/${old}`)).text).to.include('Scribe is not active');
        expect(await h.db('requests').where({ retry_of: old }).first()).to.equal(undefined);
      } finally {
        await h.services.scribes.setState(t.organizationId, t.scribe.slug, 'active');
      }
    });

    it('Discard keeps it failed for its clients, hides it from the dashboard, and is audited; a second Discard is refused', async () => {
      const id = await failedReceipt({ title: 'Discard me', summary: 'x' });
      expect((await admin.get('/')).text).to.include(`/receipts/${id}`);
      const res = await admin.post(`/receipts/${id}/discard`);
      expect(res.status).to.equal(303);
      const row = await h.db('requests').where({ id }).first('status', 'discarded_at');
      expect(row.status).to.equal('failed');
      expect(row.discarded_at).to.be.a('string');
      expect((await h.api.get(`/api/v1/requests/${id}`).set(t.headers)).body.request.status).to.equal('failed');
      expect((await admin.get('/')).text).to.not.include(`/receipts/${id}`);
      const page = await admin.get(`/receipts/${id}`);
      const text = page.text.replace(/<[^>]+>/g, '').replace(/\s+/g, ' ');
      // Said once, by the page, not again by a message.
      expect(text.split('it no longer shows among the failures').length - 1).to.equal(1);
      expect(text).to.include('Discarded just now: it no longer shows among the failures.');
      expect(page.text).to.not.include(`action="/receipts/${id}/discard"`);
      await admin.post(`/receipts/${id}/discard`);
      expect((await admin.get(`/receipts/${id}`)).text).to.include('This receipt has already been discarded');
      expect((await auditOf(id)).map((e) => e.action)).to.deep.equal(['request.discard']);
    });

    it("leaves an action's message for the page it leads to when a live page's refresh comes in between", async () => {
      const id = await failedReceipt();
      const retried = await admin.post(`/receipts/${id}/retry`);
      const refresh = await admin.agent.get('/receipts').set('X-Live-Refresh', '1');
      expect(refresh.text).to.not.include('Retried as a new receipt.');
      expect((await admin.get(retried.headers.location!)).text).to.include('Retried as a new receipt.');
    });

    it("leaves the dashboard's Recent failures once retried; its retry shows there in turn if it fails too", async () => {
      const id = await failedReceipt({ title: 'Retried failure', summary: 'x' });
      expect((await admin.get('/')).text).to.include(`/receipts/${id}`);
      const made = (await admin.post(`/receipts/${id}/retry`)).headers.location!.slice('/receipts/'.length);
      await h.services.dispatcher.tick();
      expect(await h.db('requests').where({ id: made }).first('status')).to.deep.equal({ status: 'fulfilled' });
      const dashboard = (await admin.get('/')).text;
      expect(dashboard).to.not.include(`/receipts/${id}`);
      expect(dashboard).to.not.include(`/receipts/${made}`);
      await h.db('requests').where({ id: made }).update({ status: 'failed', error_message: 'Dispatch failed after 5 attempts' });
      expect((await admin.get('/')).text)
        .to.include(`/receipts/${made}`)
        .and.not.include(`/receipts/${id}"`);
    });

    it('says on its page why it has no task, and how to try again (Retry, or ask an admin)', async () => {
      const id = await failedReceipt();
      const plain = (text: string) => text.replace(/<[^>]+>/g, '').replace(/\s+/g, ' ');
      const page = plain((await admin.get(`/receipts/${id}`)).text);
      expect(page).to.include('No task: the receipt failed before one was made (Dispatch failed after 5 attempts). Retry it to submit it again as a new receipt.');
      expect(page).to.not.include('No task yet');
      expect(plain((await viewer.get(`/receipts/${id}`)).text)).to.include('An admin can retry it as a new receipt.');
      await admin.post(`/receipts/${id}/retry`);
      expect(plain((await admin.get(`/receipts/${id}`)).text)).to.include('(Dispatch failed after 5 attempts). Its retry above makes one if it succeeds.');
    });

    it('asks for confirmation before Discard (data-confirm, read by /assets/confirm.js)', async () => {
      const id = await failedReceipt();
      const page = await admin.get(`/receipts/${id}`);
      expect(page.text).to.match(new RegExp(`<form method="post" action="/receipts/${id}/discard" data-confirm="Discard this failure\\?`));
      expect(page.text).to.include('<script src="/assets/confirm.js" defer></script>');
    });

    it("viewers see no buttons and are refused (403); another organization's receipt is 404 and untouched", async () => {
      const id = await failedReceipt();
      expect((await viewer.get(`/receipts/${id}`)).text).to.not.include('/retry"');
      expect((await viewer.post(`/receipts/${id}/retry`)).status).to.equal(403);
      expect((await viewer.post(`/receipts/${id}/discard`)).status).to.equal(403);
      const other = await h.tenant({ slug: 'other' });
      const theirs = await failedReceipt({ summary: 'theirs' }, other);
      expect((await admin.post(`/receipts/${theirs}/retry`)).status).to.equal(404);
      expect((await admin.post(`/receipts/${theirs}/discard`)).status).to.equal(404);
      expect(await h.db('requests').where({ id: theirs }).first('discarded_at')).to.deep.equal({ discarded_at: null });
      expect(await h.db('requests').where({ retry_of: theirs }).first()).to.equal(undefined);
      expect(await h.db('requests').where({ retry_of: id }).first()).to.equal(undefined);
    });
  });

  describe('a failed task', () => {
    it('Retry opens it again with its error cleared, notes who retried it, is audited, and the scribe then works it', async () => {
      const id = await failedTask();
      expect((await admin.get('/tasks?status=failed')).text).to.include(`/tasks/${id}`);
      const res = await admin.post(`/tasks/${id}/retry`);
      expect(res.headers.location).to.equal(`/tasks/${id}`);
      expect(await h.db('tasks').where({ id }).first('status', 'last_error', 'attempts')).to.deep.equal({ status: 'open', last_error: null, attempts: 0 });
      const event = await h.db('task_events').where({ task_id: id }).orderBy('id', 'desc').first('from_status', 'to_status', 'author', 'text');
      expect(event).to.deep.equal({ from_status: 'waiting', to_status: 'open', author: 'system', text: `Retried by ${admin.email}` });
      expect((await auditOf(id)).map((e) => e.action)).to.deep.equal(['task.retry']);
      expect((await admin.get('/tasks?status=failed')).text).to.not.include(`/tasks/${id}`);
      await h.services.runtime.tick();
      expect(await h.db('tasks').where({ id }).first('status')).to.deep.equal({ status: 'done' });
    });

    it('a task waiting on a question (not failed) cannot be retried or discarded', async () => {
      const id = await failedTask();
      await h.db('tasks').where({ id }).update({ last_error: null });
      expect((await admin.get(`/tasks/${id}`)).text).to.not.include(`/tasks/${id}/retry`);
      await admin.post(`/tasks/${id}/retry`);
      expect((await admin.get(`/tasks/${id}`)).text).to.include('Only a failed task can be retried or discarded');
      expect(await h.db('tasks').where({ id }).first('status')).to.deep.equal({ status: 'waiting' });
    });

    it('Discard hides it from the failures and the failed filter keeps showing it marked; a later failure after a retry shows again', async () => {
      const id = await failedTask('Discard this task');
      await admin.post(`/tasks/${id}/discard`);
      expect((await h.db('tasks').where({ id }).first('status', 'discarded_at')).status).to.equal('waiting');
      expect((await admin.get('/')).text).to.not.include(`/tasks/${id}`);
      const list = await admin.get('/tasks?status=failed&q=Discard%20this');
      expect(list.text).to.include(`/tasks/${id}`).and.include('discarded');
      // Retried later and failing again: the discard was of the earlier failure.
      await admin.post(`/tasks/${id}/retry`);
      await h.db('tasks').where({ id }).update({ status: 'waiting', last_error: 'again' });
      expect((await h.db('tasks').where({ id }).first('discarded_at')).discarded_at).to.equal(null);
      expect((await admin.get('/')).text).to.include(`/tasks/${id}`);
    });
  });

  describe('a failed session', () => {
    it('Retry asks the scribe again (a system note in the transcript), is audited, and the scribe answers', async () => {
      const id = await failedSession();
      expect((await admin.get(`/sessions/${id}`)).text).to.include(`action="/sessions/${id}/retry"`);
      const res = await admin.post(`/sessions/${id}/retry`);
      expect(res.headers.location).to.equal(`/sessions/${id}`);
      expect(await h.db('sessions').where({ id }).first('state', 'error_message')).to.deep.equal({ state: 'queued', error_message: null });
      const last = await h.db('session_messages').where({ session_id: id }).orderBy('id', 'desc').first('author', 'text');
      expect(last).to.deep.equal({ author: 'system', text: `Retried by ${admin.email}` });
      expect((await auditOf(id)).map((e) => e.action)).to.deep.equal(['session.retry']);
      await h.services.runtime.tick();
      const answered = await h.db('sessions').where({ id }).first('state');
      expect(answered.state).to.equal('waiting');
      expect((await h.db('session_messages').where({ session_id: id }).orderBy('id', 'desc').first('author')).author).to.equal('scribe');
    });

    it("shows its error once, as the transcript's last note, and once discarded says so once", async () => {
      const id = await failedSession();
      // As the runtime fails a session: the reason in the session and as a system note.
      await h
        .db('session_messages')
        .insert({ session_id: id, author: 'system', text: 'The scribe could not answer: model endpoint answered 500', created_at: new Date().toISOString() });
      const count = (text: string, part: string) => text.split(part).length - 1;
      const page = (await admin.get(`/sessions/${id}`)).text;
      expect(count(page, 'model endpoint answered 500')).to.equal(1);
      await admin.post(`/sessions/${id}/discard`);
      const discarded = (await admin.get(`/sessions/${id}`)).text;
      expect(count(discarded, 'Discarded')).to.equal(1);
      expect(count(discarded, 'it no longer shows among the failures')).to.equal(1);
    });

    it('Discard keeps it failed and hides it from the dashboard; Retry of a session that did not fail is refused', async () => {
      const id = await failedSession();
      await admin.post(`/sessions/${id}/discard`);
      expect((await h.db('sessions').where({ id }).first('state')).state).to.equal('failed');
      expect((await admin.get('/')).text).to.not.include(`/sessions/${id}`);
      expect((await auditOf(id)).map((e) => e.action)).to.deep.equal(['session.discard']);
      await h.db('sessions').where({ id }).update({ state: 'waiting' });
      await admin.post(`/sessions/${id}/retry`);
      expect((await admin.get(`/sessions/${id}`)).text).to.include('Only a failed session can be retried or discarded');
    });
  });

  describe('bulk retry and discard of a filtered list', () => {
    let org: Tenant;
    let client: ConsoleClient;
    before(async () => {
      org = await h.tenant({ slug: 'bulk' });
      client = await signIn(h, org, 'admin');
    });

    /** The preview's moment, which its confirmation sends back. */
    const uptoOf = (html: string): string => /name="upto" value="([^"]+)"/.exec(html)![1]!;

    async function failed(title: string): Promise<string> {
      const id = await submit({ title, summary: title }, org);
      const at = new Date().toISOString();
      await h.db('requests').where({ id }).update({ status: 'failed', error_message: 'gave up', completed_at: at, updated_at: at });
      return id;
    }

    it('offers bulk actions only on the failed filter, previews the count of what the filters select, and retries exactly those on confirmation', async () => {
      const invoices = [await failed('Invoice 1'), await failed('Invoice 2'), await failed('Invoice 3')];
      const other = await failed('Payroll');
      expect((await client.get('/receipts')).text).to.not.include('/receipts/bulk');
      const list = await client.get('/receipts?status=failed&q=invoice');
      expect(list.text).to.include('href="/receipts/bulk?status=failed&amp;q=invoice&amp;action=retry"');

      const preview = await client.get('/receipts/bulk?status=failed&q=invoice&action=retry');
      expect(preview.status).to.equal(200);
      expect(preview.text).to.include('<dd id="bulk-count" data-count="3">3 receipts</dd>').and.include('whose title contains “invoice”');
      expect(await h.db('requests').whereIn('retry_of', invoices).count({ n: '*' }).first(), 'the preview changes nothing').to.deep.equal({ n: 0 });
      const upto = uptoOf(preview.text);

      // A failure arriving after the preview is not part of what was confirmed.
      await new Promise((r) => setTimeout(r, 5));
      const late = await failed('Invoice 4');
      const res = await client.post('/receipts/bulk', { action: 'retry', status: 'failed', q: 'invoice', upto });
      expect(res.status).to.equal(303);
      expect(res.headers.location).to.equal('/receipts?status=failed&q=invoice');
      expect((await client.get(res.headers.location!)).text).to.include('Retried 3 receipts.');
      const retried = await h.db('requests').whereNotNull('retry_of').where({ organization_id: org.organizationId }).pluck('retry_of');
      expect(retried.sort()).to.deep.equal([...invoices].sort());
      expect(retried).to.not.include(other).and.not.include(late);
      const audited = await h.db('audit_events').where({ organization_id: org.organizationId, action: 'request.retry' }).pluck('subject_id');
      expect(audited.sort()).to.deep.equal([...invoices].sort());

      // Confirmed again: the three are retried already, so only the late one is left.
      const again = await client.get('/receipts/bulk?status=failed&q=invoice&action=retry');
      expect(again.text).to.include('data-count="1"');
    });

    it('bulk discard counts only failures not yet discarded, and says what it could not do', async () => {
      const a = await failed('Refund A');
      const b = await failed('Refund B');
      await client.post(`/receipts/${a}/discard`);
      const preview = await client.get('/receipts/bulk?status=failed&q=refund&action=discard');
      expect(preview.text).to.include('data-count="1"');
      const upto = uptoOf(preview.text);
      await client.post('/receipts/bulk', { action: 'discard', status: 'failed', q: 'refund', upto });
      expect((await h.db('requests').where({ id: b }).first('discarded_at')).discarded_at).to.be.a('string');

      // Retrying while the scribe is off: each refusal is counted with its reason.
      const c = await failed('Refund C');
      await h.services.scribes.setState(org.organizationId, 'bulk', 'powered_off');
      try {
        const p = await client.get('/receipts/bulk?status=failed&q=refund&action=retry');
        const at = uptoOf(p.text);
        const res = await client.post('/receipts/bulk', { action: 'retry', status: 'failed', q: 'refund', upto: at });
        expect((await client.get(res.headers.location!)).text).to.include('Retried 0 of 3 receipts; not retried: 3: Scribe is not active.');
        expect(await h.db('requests').whereIn('retry_of', [a, b, c]).first()).to.equal(undefined);
      } finally {
        await h.services.scribes.setState(org.organizationId, 'bulk', 'active');
      }
    });

    it('bulk retry of failed tasks, filtered by scribe, opens each again', async () => {
      const ids: string[] = [];
      for (const title of ['Task A', 'Task B']) {
        const id = await submit({ title, summary: title }, org);
        await h.services.dispatcher.tick();
        const task = await h.db('tasks').where({ request_id: id }).first('id');
        await h.db('tasks').where({ id: task.id }).update({ status: 'waiting', last_error: 'boom' });
        ids.push(task.id);
      }
      const preview = await client.get('/tasks/bulk?status=failed&scribe=bulk&action=retry');
      expect(preview.text).to.include('data-count="2"');
      const upto = uptoOf(preview.text);
      const res = await client.post('/tasks/bulk', { action: 'retry', status: 'failed', scribe: 'bulk', upto });
      expect((await client.get(res.headers.location!)).text).to.include('Retried 2 tasks.');
      expect(await h.db('tasks').whereIn('id', ids).pluck('status')).to.deep.equal(['open', 'open']);
    });

    it('bulk discard and retry of failed sessions whose messages contain a text', async () => {
      const chat = async (message: string) => {
        const id = (await h.api.post('/api/v1/scribes/bulk/chat').set(org.headers).send({ message })).body.session_id as string;
        await h.db('sessions').where({ id }).update({ state: 'failed', reply_due: false, error_message: 'boom' });
        return id;
      };
      const [a, b] = [await chat('About the Zurich office'), await chat('zurich again')];
      const other = await chat('Geneva');
      expect((await client.get('/sessions?state=failed&q=zurich')).text).to.include('href="/sessions/bulk?state=failed&amp;q=zurich&amp;action=discard"');
      const preview = await client.get('/sessions/bulk?state=failed&q=zurich&action=discard');
      expect(preview.text).to.include('data-count="2"').and.include('with a message containing “zurich”');
      const res = await client.post('/sessions/bulk', { action: 'discard', state: 'failed', q: 'zurich', upto: uptoOf(preview.text) });
      expect(res.headers.location).to.equal('/sessions?state=failed&q=zurich');
      expect((await client.get(res.headers.location!)).text).to.include('Discarded 2 sessions.');
      expect(await h.db('sessions').whereIn('id', [a, b, other]).whereNotNull('discarded_at').pluck('id')).to.have.members([a, b]);

      const retry = await client.get('/sessions/bulk?state=failed&q=zurich&action=retry');
      expect(retry.text).to.include('data-count="2"');
      await client.post('/sessions/bulk', { action: 'retry', state: 'failed', q: 'zurich', upto: uptoOf(retry.text) });
      expect(await h.db('sessions').whereIn('id', [a, b, other]).orderBy('created_at').pluck('state')).to.deep.equal(['queued', 'queued', 'failed']);
    });

    it('refuses a confirmation without its preview time, a bad action (400), and viewers (403)', async () => {
      const res = await client.post('/receipts/bulk', { action: 'retry' });
      expect(res.status).to.equal(303);
      expect((await client.get(res.headers.location!)).text).to.include('The confirmation has no preview time; open the preview again.');
      expect((await client.get('/receipts/bulk?action=delete')).status).to.equal(400);
      const watcher = await signIn(h, org, 'viewer');
      expect((await watcher.get('/receipts/bulk?action=retry')).status).to.equal(403);
      expect((await watcher.post('/receipts/bulk', { action: 'retry', upto: new Date().toISOString() })).status).to.equal(403);
    });

    it(`acts on at most ${BULK_MAX} at once, oldest first, and the preview says so`, async () => {
      const many = await h.tenant({ slug: 'many' });
      const manyClient = await signIn(h, many, 'admin');
      const base = Date.parse('2026-01-01T00:00:00.000Z');
      const rows = Array.from({ length: BULK_MAX + 2 }, (_, i) => {
        const at = new Date(base + i * 1000).toISOString();
        return {
          id: `req_01J${String(i).padStart(23, '0')}`,
          organization_id: many.organizationId,
          scribe_id: many.scribe.id,
          status: 'failed',
          entity_type: 'task',
          title: `Old ${i}`,
          summary: 'x',
          available_at: at,
          attempts: 5,
          created_at: at,
          updated_at: at,
          completed_at: at,
          error_message: 'gave up',
        };
      });
      for (let i = 0; i < rows.length; i += 100) await h.db('requests').insert(rows.slice(i, i + 100));
      const preview = await manyClient.get('/receipts/bulk?status=failed&action=discard');
      expect(preview.text)
        .to.include(`data-count="${BULK_MAX + 2}"`)
        .and.include(`Only the oldest ${BULK_MAX} are discarded at once`);
      const upto = uptoOf(preview.text);
      await manyClient.post('/receipts/bulk', { action: 'discard', status: 'failed', upto });
      const left = await h.db('requests').where({ organization_id: many.organizationId }).whereNull('discarded_at').pluck('title');
      expect(left).to.have.members([`Old ${BULK_MAX}`, `Old ${BULK_MAX + 1}`]);
    });
  });
});
