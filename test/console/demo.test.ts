import { expect } from 'chai';
import type { Knex } from 'knex';
import { createHarness, type Harness } from '../helpers/harness.js';
import supertest from 'supertest';
import { csrfTokenOf } from '../helpers/console.js';
import { createLogger } from '../../src/logger.js';
import { createServices } from '../../src/services.js';
import { DASHBOARD_SPAN } from '../../src/console/activity-charts.js';
import { bucketRanges, timeWindow } from '../../src/console/charts.js';
import { latestQuestions } from '../../src/tasks/queries.js';
import { DEMO, seed, type DemoCredentials } from '../../seeds/demo.js';
import { FAILING_ENDPOINT } from '../../seeds/demo-history.js';
import { latestFireAtOrBefore } from '../../src/schedules/cron.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const TABLES = [
  'organizations',
  'api_keys',
  'users',
  'scribes',
  'schedules',
  'schedule_fires',
  'channels',
  'requests',
  'tasks',
  'task_events',
  'sessions',
  'session_messages',
  'agent_calls',
  'stream_events',
  'webhook_endpoints',
  'webhook_events',
  'webhook_deliveries',
  'audit_events',
  'entries',
];

/**
 * The seed's promises, for a seed made at `at` (the real time unless given; the harness's app
 * reads the same clock). The history's moments are set by time of day (the schedules) as well
 * as back from now, so it is checked at the real time and at the hours where they meet.
 */
function describeSeed(title: string, at?: number) {
  describe(title, function () {
    this.timeout(60_000);
    let shift = 0;
    const realNow = () => Date.now() + shift;
    let h: Harness;
    let demo: DemoCredentials;
    let staff: ReturnType<typeof supertest.agent>;
    let seededAt: number;
    const run = () => seed((options) => createServices({ config: h.config, db: h.db, logger: createLogger('silent'), options }), { realNow });
    const count = async (table: string, where: (q: Knex.QueryBuilder) => unknown = () => {}) => {
      const query = h.db(table);
      where(query);
      return Number((await query.count({ n: '*' }).first())!.n);
    };

    before(async () => {
      h = await createHarness({ options: { clock: () => new Date(realNow()) } });
      // The clock reads `at` just as the seed begins, and runs on from there.
      if (at !== undefined) shift = at - Date.now();
      seededAt = realNow();
      demo = await run();
      // The demo's own console login.
      staff = supertest.agent(h.app);
      const login = await staff.get('/login');
      const signedIn = await staff
        .post('/login')
        .type('form')
        .send({ _csrf: csrfTokenOf(login.text), email: demo.email, password: demo.password });
      expect(signedIn.status).to.equal(303);
    });
    after(() => h.close());

    it('gives the dashboard receipts in each of the last three days, and in every bar of its charts but the one filling now', async () => {
      const now = realNow();
      const days = [3, 2, 1].map((n) => ({ from: new Date(now - n * 24 * HOUR).toISOString(), to: new Date(now - (n - 1) * 24 * HOUR).toISOString() }));
      for (const day of await h.services.consoleReads.receiptsByBucket(demo.organizationId, days)) {
        expect(day.fulfilled).to.be.greaterThan(10);
        expect(day.failed).to.be.greaterThan(0);
      }
      const bars = bucketRanges(timeWindow(now, DASHBOARD_SPAN.spanMs, DASHBOARD_SPAN.bucketMs));
      const receipts = await h.services.consoleReads.receiptsByBucket(demo.organizationId, bars);
      // A bar the seed's last minutes left empty may still be the one filling now, if the clock reached the next bar since.
      expect(receipts.filter((bar) => bar.fulfilled > 0).length).to.be.at.least(bars.length - 2);
      expect(
        receipts.some((bar) => bar.failed > 0),
        'a failure in the last 3 hours',
      ).to.equal(true);
      const latencies = await h.services.consoleReads.fulfilledLatencies(demo.organizationId, bars, 100);
      expect(latencies.filter((ms) => ms.length > 0).length).to.be.at.least(bars.length - 2);
      // Seconds at most, as the dispatcher takes them: not the minutes between bursts.
      expect(latencies.flat().every((ms) => ms > 0 && ms < 10_000)).to.equal(true);

      const page = await staff.get('/');
      expect(page.status).to.equal(200);
      expect(page.text).not.to.include('No receipts in the last 3 hours.');
      expect(page.text).not.to.include('No receipts fulfilled in the last 3 hours.');
    });

    it('lists a failed receipt, task and session among the recent failures, each with its reason', async () => {
      const failures = await h.services.consoleReads.recentFailures(demo.organizationId);
      const reasons = (kind: string) => failures.filter((f) => f.kind === kind).map((f) => `${f.scribe_slug}: ${f.what}: ${f.message}`);
      expect(reasons('receipt')).to.include('hermes: Pass the Acme escalation on to engineering: Scribe is not active');
      expect(reasons('task')).to.include('atlas: Import the March invoices: There is no entry type "Invoices" (there are: Companies, Contacts)');
      expect(reasons('session')).to.deep.equal(['atlas: chat session: There is no entry type "Locations" (there are: Companies, Contacts)']);
      const page = await staff.get('/');
      expect(page.text).to.include('Scribe is not active');
      expect(page.text).to.include('There is no entry type &#34;Invoices&#34;');
      expect(page.text).to.include('There is no entry type &#34;Locations&#34;');
      // What staff did about earlier ones: one retried (its retry fulfilled), one discarded.
      const retry = await h.db('requests').whereNotNull('retry_of').first('status', 'retry_of');
      expect(retry.status).to.equal('fulfilled');
      expect((await h.db('requests').where({ id: retry.retry_of }).first('status')).status).to.equal('failed');
      expect(await count('requests', (q) => q.whereNotNull('discarded_at'))).to.equal(1);
    });

    it('has a webhook endpoint whose deliveries all fail: the oldest given up, the others retried on the schedule', async () => {
      const [endpoint] = await h.services.webhooks.list(demo.organizationId);
      expect(endpoint).to.include({ url: FAILING_ENDPOINT.url, enabled: true });
      expect(endpoint!.failing_since).to.be.a('string');
      const deliveries = await h.services.webhooks.deliveries(endpoint!.id);
      expect(deliveries.map((d) => d.error)).to.satisfy((errors: string[]) => errors.length > 5 && errors.every((e) => e === 'address not allowed'));
      const oldest = deliveries.at(-1)!;
      expect(oldest).to.include({ status: 'failed', attempts: 11, event_type: 'task.waiting' });
      const pending = deliveries.filter((d) => d.status === 'pending');
      expect(pending.length).to.equal(deliveries.length - 1);
      expect(pending.every((d) => d.attempts > 0 && Date.parse(d.available_at) > seededAt)).to.equal(true);
      const page = await staff.get(`/webhooks/${endpoint!.id}/deliveries/${oldest.id}`);
      expect(page.status).to.equal(200);
      expect(page.text).to.include('address not allowed');
    });

    it("has a task waiting for input with the scribe's question, and one that got its input and was done", async () => {
      const waiting = await h.db('tasks').where({ organization_id: demo.organizationId, status: 'waiting' }).whereNull('last_error').select('id', 'title');
      expect(waiting.map((t) => t.title)).to.deep.equal(['Which enterprise accounts renew this quarter?']);
      const questions = await latestQuestions(h.db, [waiting[0]!.id]);
      expect(questions.get(waiting[0]!.id)).to.match(/^Our Companies entries have no renewal dates\./);
      const answered = await h.db('tasks').where({ title: 'Who should join the customer advisory board?' }).first('id', 'status', 'result');
      expect(answered.status).to.equal('done');
      const events = await h.services.tasks.get(demo.organizationId, answered.id).then((t) => t.events.map((e) => `${e.author} ${e.to_status}`));
      expect(events).to.deep.equal(['system open', 'scribe in_progress', 'scribe waiting', 'staff open', 'scribe in_progress', 'scribe done']);
      expect(answered.result).to.match(/^Listed companies with more than 2,000 employees/);
    });

    it("has schedules with past fires, each fire's receipt fulfilled and its task done", async () => {
      const [digest] = (await h.services.schedules.list(demo.organizationId)).filter((s) => s.title === 'Morning digest');
      const fires = await h.services.schedules.fires(digest!.id);
      expect(fires.length).to.be.within(2, 4);
      for (const fire of fires) {
        expect(fire.outcome).to.equal('submitted');
        expect(Date.parse(fire.fire_at)).to.be.lessThan(seededAt);
        const receipt = await h.services.requests.get(demo.organizationId, fire.request_id!);
        expect(receipt.status).to.equal('fulfilled');
        expect((await h.services.tasks.get(demo.organizationId, receipt.entity_id!)).status).to.equal('done');
      }
      expect(Date.parse(digest!.next_run_at!)).to.be.greaterThan(seededAt);
    });

    it('has chats with atlas of a few turns, replies in Markdown, and a failed one', async () => {
      const sessions = await h.db('sessions').where({ organization_id: demo.organizationId }).orderBy('created_at').select('id', 'state');
      expect(sessions.map((s) => s.state)).to.deep.equal(['waiting', 'waiting', 'failed']);
      const first = await h.services.sessions.get(demo.organizationId, sessions[0]!.id);
      expect(first.messages.map((m) => m.author)).to.deep.equal(['user', 'scribe', 'user', 'scribe', 'user', 'scribe']);
      expect(first.messages[1]!.text).to.match(/^\*\*Acme Corp\*\*: Manufacturing, Zurich, 1,200 employees/);
      expect(first.messages[3]!.text).to.include('```sh\ncurl -s -X POST');
      const page = await staff.get(`/sessions/${sessions[0]!.id}`);
      expect(page.text).to.include('<code class="language-sh">');
      expect(page.text).to.include('<li><strong>Ada Lovelace</strong>');
    });

    it('leaves no work in flight and nothing dated after it ran', async () => {
      expect(await count('requests', (q) => q.whereIn('status', ['accepted', 'dispatched']))).to.equal(0);
      expect(await count('tasks', (q) => q.whereIn('status', ['open', 'in_progress']).orWhereNotNull('claim_token'))).to.equal(0);
      expect(await count('sessions', (q) => q.whereIn('state', ['queued', 'running']).orWhereNotNull('claim_token'))).to.equal(0);
      expect((await h.db('scribes').orderBy('slug').select('slug', 'state', 'runs_in_flight')).map((s) => `${s.slug} ${s.state} ${s.runs_in_flight}`)).to.deep.equal(
        DEMO.scribes.map((s) => `${s.slug} ${s.state} 0`),
      );
      for (const [table, column] of [
        ['requests', 'updated_at'],
        ['tasks', 'updated_at'],
        ['task_events', 'created_at'],
        ['session_messages', 'created_at'],
        ['webhook_deliveries', 'last_attempt_at'],
        ['entries', 'created_at'],
      ] as const) {
        expect(Date.parse((await h.db(table).max({ at: column }).first())!.at), table).to.be.lessThan(realNow());
      }
      // The history starts three days back, with the organization made a few minutes before it (a schedule may fire in them).
      const made = Date.parse((await h.db('organizations').where({ id: demo.organizationId }).first('created_at')).created_at);
      expect(made).to.be.within(seededAt - 72 * HOUR - 20 * MINUTE, seededAt - 72 * HOUR);
      const oldest = (await h.db('requests').min({ at: 'created_at' }).first())!.at as string;
      expect(Date.parse(oldest)).to.be.within(made, seededAt - 69 * HOUR);
    });

    it('adds nothing when run again, and answers the same credentials', async () => {
      const before = Object.fromEntries(await Promise.all(TABLES.map(async (t) => [t, await count(t)])));
      expect(await run()).to.deep.equal(demo);
      const after = Object.fromEntries(await Promise.all(TABLES.map(async (t) => [t, await count(t)])));
      expect(after).to.deep.equal(before);
    });
  });
}

// The morning digest's latest fire time, for the hours where the schedules meet the history's other moments.
const digest = DEMO.schedules.find((s) => s.title === 'Morning digest')!;
const digestFired = latestFireAtOrBefore(digest, new Date()).getTime();

describeSeed('the demo seed');
describeSeed("the demo seed, made a minute after the morning digest's fire time (too late in the history for a moment of its own)", digestFired + 48_000);
// hermes's last power cut is 130 minutes back: its receipts come in 200 ms before it, and the digest's fire (and dispatch) falls between.
describeSeed("the demo seed, made as hermes's last power cut meets the morning digest's fire", digestFired + 130 * MINUTE + 300);
