import { expect } from 'chai';
import type { AddressInfo } from 'node:net';
import { createHarness, eventually, staffOf, testClock, type Harness, type Tenant } from '../helpers/harness.js';
import { PASSWORD, signIn, signInByForm, type ConsoleClient } from '../helpers/console.js';
import type { Actor } from '../../src/audit/service.js';

describe('console: audit review', () => {
  const clock = testClock('2026-11-20T10:00:00.000Z');
  let h: Harness;
  let t: Tenant;
  let admin: ConsoleClient;
  const ids: Record<string, number> = {};
  const operator = (): Actor => ({ type: 'operator', id: null, label: 'admin CLI', organizationId: t.organizationId });
  const keyActor = (): Actor => ({ type: 'api_key', id: t.keyId, label: 'Deploy bot (sk_abc)', organizationId: t.organizationId });

  before(async () => {
    h = await createHarness({ options: { clock, dispatchOnAccept: false, runOnNewWork: false } });
    t = await h.tenant();
    admin = await signIn(h, t, 'admin');
    const record = async (name: string, at: string, actor: Actor, action: string, subject: { type: string; id: string }, detail?: string) => {
      clock.set(at);
      await h.services.audit.record(actor, action, subject, detail);
      ids[name] = (await h.db('audit_events').max({ id: 'id' }).first())!.id;
    };
    await record('state', '2026-11-20T10:00:00.000Z', staffOf(t), 'scribe.state', { type: 'scribe', id: t.scribe.id }, 'powered_off');
    await record('submit', '2026-11-21T09:30:00.000Z', keyActor(), 'request.submit', { type: 'request', id: 'req_01KAAAAAAAAAAAAAAAAAAAAAAA' }, 'Quarterly, "numbers"\nand more');
    await record(
      'schedule',
      '2026-11-22T23:59:59.000Z',
      operator(),
      'schedule.create',
      { type: 'schedule', id: '01935f00-0000-7000-8000-0000000000a1' },
      '=HYPERLINK("http://evil.example")',
    );
    await record('pause', '2026-11-23T08:00:00.000Z', staffOf(t), 'schedule.pause', { type: 'schedule', id: '01935f00-0000-7000-8000-0000000000a1' });
    // Another organization's event never shows.
    const other = await h.tenant({ slug: 'other' });
    await h.services.audit.record(staffOf(other), 'scribe.state', { type: 'scribe', id: other.scribe.id }, 'active');
  });
  after(() => h.close());

  /** The ids of the events a filtered page lists, newest first. */
  const listed = async (query: string) => {
    const res = await admin.get(`/audit${query}`);
    expect(res.status, query).to.equal(200);
    return [...res.text.matchAll(/<tr>\s*<td><time datetime="([^"]+)"/g)].map((m) => m[1]);
  };
  // Events the sign-in itself may add are left out by time: all four above are before 2026-11-23T09:00.
  const upTo = '&to=2026-11-23T09:00';

  it('filters by actor type, actor, action (or its family), subject and time range', async () => {
    expect(await listed(`?actor_type=user${upTo}`)).to.deep.equal(['2026-11-23T08:00:00.000Z', '2026-11-20T10:00:00.000Z']);
    expect(await listed(`?actor=deploy%20BOT${upTo}`)).to.deep.equal(['2026-11-21T09:30:00.000Z']);
    expect(await listed(`?action=schedule.${upTo}`)).to.deep.equal(['2026-11-23T08:00:00.000Z', '2026-11-22T23:59:59.000Z']);
    expect(await listed(`?action=schedule.create${upTo}`)).to.deep.equal(['2026-11-22T23:59:59.000Z']);
    expect(await listed('?subject_type=schedule&subject_id=01935f00-0000-7000-8000-0000000000a1')).to.deep.equal(['2026-11-23T08:00:00.000Z', '2026-11-22T23:59:59.000Z']);
    // A date means the whole day (UTC); a date and time is exact.
    expect(await listed('?from=2026-11-21&to=2026-11-22')).to.deep.equal(['2026-11-22T23:59:59.000Z', '2026-11-21T09:30:00.000Z']);
    expect(await listed('?from=2026-11-21T09:30&to=2026-11-22T23:59')).to.deep.equal(['2026-11-21T09:30:00.000Z']);
    // LIKE's wildcards are literal in the actor filter.
    expect(await listed(`?actor=%25${upTo}`)).to.deep.equal([]);
  });

  it("refuses a time it cannot read, or a day or time that does not exist, with 400 on the log's own page, the filters as typed", async () => {
    for (const [query, name] of [
      ['?from=yesterday&actor=someone%40example.com', 'From'],
      ['?from=2026-11-31&actor=someone%40example.com', 'From'],
      ['?to=2026-02-30&actor=someone%40example.com', 'To'],
      ['?to=2026-11-23T24%3A10&actor=someone%40example.com', 'To'],
    ] as const) {
      const res = await admin.get(`/audit${query}`);
      expect(res.status, query).to.equal(400);
      expect(res.text, query).to.include(`<p class="flash flash-error" role="alert">${name} must be a date (2026-11-23) or a date and time in UTC (2026-11-23T14:30)</p>`);
      expect(res.text, query).to.include('<form method="get" action="/audit" class="filters" aria-label="Filter the audit log">');
      expect(res.text, query).to.include('<input name="actor" value="someone@example.com"');
      expect(res.text, query).to.not.include('<table class="table">');
    }
    // Days that exist at the month's and the leap year's ends are read as given.
    for (const query of ['?from=2026-11-30', '?to=2028-02-29', '?from=2026-12-31T23:59']) expect((await admin.get(`/audit${query}`)).status, query).to.equal(200);
  });

  it('links each subject to its whole history, and shows one no longer found by its id, "(deleted)" and unlinked', async () => {
    const res = await admin.get(`/audit?action=request.submit`);
    expect(res.text).to.include('<span class="mono">req_01KAAAAAAAAAAAAAAAAAAAAAAA</span> <span class="hint">(deleted)</span>');
    expect(res.text).to.not.include('href="/receipts/req_01KAAAAAAAAAAAAAAAAAAAAAAA"');
    expect(res.text).to.include('href="/audit?subject_type=request&amp;subject_id=req_01KAAAAAAAAAAAAAAAAAAAAAAA"');
    // The subject pages link their history.
    expect((await admin.get(`/b/${t.scribe.slug}`)).text).to.include(`href="/audit?subject_type=scribe&amp;subject_id=${t.scribe.id}"`);
    expect((await admin.get('/keys')).text).to.include(`href="/audit?subject_type=api_key&amp;subject_id=${t.keyId}"`);
  });

  it('exports the filtered view as CSV: every matching row, newest first, quoted where needed, formulas made inert', async () => {
    const res = await admin.get(`/audit.csv?from=2026-11-21${upTo}`);
    expect(res.status).to.equal(200);
    expect(res.headers['content-type']).to.equal('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).to.match(/^attachment; filename="?audit-\d{4}-\d{2}-\d{2}\.csv"?$/);
    expect(res.text).to.equal(
      [
        'id,created_at,actor_type,actor_id,actor_label,action,subject_type,subject_id,detail',
        `${ids.pause},2026-11-23T08:00:00.000Z,user,01935f00-0000-7000-8000-00000000057a,staff@example.com,schedule.pause,schedule,01935f00-0000-7000-8000-0000000000a1,`,
        `${ids.schedule},2026-11-22T23:59:59.000Z,operator,,admin CLI,schedule.create,schedule,01935f00-0000-7000-8000-0000000000a1,"'=HYPERLINK(""http://evil.example"")"`,
        `${ids.submit},2026-11-21T09:30:00.000Z,api_key,${t.keyId},Deploy bot (sk_abc),request.submit,request,req_01KAAAAAAAAAAAAAAAAAAAAAAA,"Quarterly, ""numbers""\nand more"`,
        '',
      ].join('\n'),
    );
  });

  it('exports more rows than one batch, none twice', async () => {
    const many = await h.tenant({ slug: 'many' });
    const client = await signIn(h, many, 'viewer');
    clock.set('2026-11-10T00:00:00.000Z');
    for (let i = 0; i < 2345; i++) await h.services.audit.record(staffOf(many), 'entry.update', { type: 'entry', id: `e${i}` });
    const res = await client.get('/audit.csv?action=entry.update');
    const rows = res.text.trim().split('\n').slice(1);
    expect(rows).to.have.length(2345);
    expect(new Set(rows.map((r) => r.split(',')[7])).size).to.equal(2345);
  });

  it('keeps audit rows as written: the database refuses updates and deletes', async () => {
    for (const change of [() => h.db('audit_events').where({ id: ids.state }).update({ detail: 'rewritten' }), () => h.db('audit_events').where({ id: ids.state }).delete()]) {
      const err = await change().then(
        () => null,
        (e: Error) => e,
      );
      expect(err?.message).to.include('audit events are append-only');
    }
    expect(await h.db('audit_events').where({ id: ids.state }).first()).to.include({ detail: 'powered_off' });
  });
  it('ends an export whose client went away, rather than wait for it forever', async () => {
    // Enough rows that the export outruns what the connection buffers (the log is append-only: this test comes last).
    const rows = Array.from({ length: 20_000 }, (_, i) => ({
      organization_id: t.organizationId,
      actor_type: 'operator',
      actor_id: null,
      actor_label: 'admin CLI',
      action: 'bulk.test',
      subject_type: 'scribe',
      subject_id: t.scribe.id,
      detail: `row ${i} ${'x'.repeat(200)}`,
      created_at: '2026-11-19T00:00:00.000Z',
    }));
    for (let i = 0; i < rows.length; i += 500) await h.db('audit_events').insert(rows.slice(i, i + 500));
    // The rows the export has read, and whether it has finished reading.
    const each = h.services.audit.each.bind(h.services.audit);
    let read = 0;
    let finished = false;
    h.services.audit.each = async function* (...args: Parameters<typeof each>) {
      try {
        for await (const event of each(...args)) {
          read++;
          yield event;
        }
      } finally {
        finished = true;
      }
    };
    const server = h.app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const signedIn = await signInByForm(base, admin.email, PASSWORD);
      const cookie = signedIn.headers.get('set-cookie')!.split(';')[0]!;
      const abort = new AbortController();
      const res = await fetch(`${base}/audit.csv?action=bulk.test`, { headers: { cookie }, signal: abort.signal });
      expect(res.status).to.equal(200);
      const reader = res.body!.getReader();
      await reader.read();
      abort.abort();
      await eventually(async () => (finished ? true : undefined), 5_000);
      expect(read, 'stopped well before the end').to.be.lessThan(rows.length);
    } finally {
      h.services.audit.each = each;
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
