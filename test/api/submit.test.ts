import { expect } from 'chai';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('POST /api/v1/scribes/:scribe_id/requests', () => {
  let h: Harness;
  let t: Tenant;
  before(async () => {
    h = await createHarness({ options: { dispatchOnAccept: false } });
    t = await h.tenant();
  });
  after(() => h.close());

  const submit = (body: unknown, tenant = t, slug = tenant.scribe.slug) =>
    h.api
      .post(`/api/v1/scribes/${slug}/requests`)
      .set(tenant.headers)
      .send(body as object);

  async function expect422(body: unknown, error: string) {
    const before = await h.db('requests').count({ n: '*' }).first();
    const res = await submit(body);
    expect(res.status, JSON.stringify(body)).to.equal(422);
    expect(res.body).to.deep.equal({ error });
    expect(await h.db('requests').count({ n: '*' }).first(), 'nothing stored').to.deep.equal(before);
  }

  it('answers 202 with an accepted receipt of exactly the eight fields', async () => {
    const res = await submit({ task: { summary: 'Write the report' } });
    expect(res.status).to.equal(202);
    expect(Object.keys(res.body)).to.deep.equal(['request']);
    const r = res.body.request;
    expect(Object.keys(r).sort()).to.deep.equal(['created_at', 'entity_id', 'entity_type', 'error_message', 'id', 'scribe_id', 'status', 'updated_at'].sort());
    expect(r.id).to.match(/^req_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(r).to.include({ scribe_id: 'atlas', status: 'accepted', entity_type: 'task', entity_id: null, error_message: null });
    expect(r.created_at).to.match(ISO_MS);
    expect(r.updated_at).to.equal(r.created_at);
  });

  it('stores the task input with the receipt', async () => {
    const res = await submit({
      actor_kind: 'task',
      task: { summary: 'Do it', title: 'My title', acceptance_criteria: 'Done when done' },
      unknown_field: 'ignored',
    });
    expect(res.status).to.equal(202);
    const row = await h.db('requests').where({ id: res.body.request.id }).first();
    expect(row).to.include({
      organization_id: t.organizationId,
      scribe_id: t.scribe.id,
      status: 'accepted',
      title: 'My title',
      summary: 'Do it',
      acceptance_criteria: 'Done when done',
    });
  });

  it('generates the title from the summary when omitted', async () => {
    const summary = 'Compile a list of every open invoice older than ninety days and email it to finance team\nsecond line';
    const res = await submit({ task: { summary } });
    const row = await h.db('requests').where({ id: res.body.request.id }).first();
    expect(row.title).to.equal('Compile a list of every open invoice older than ninety days and email it to…');
    expect([...row.title].length).to.be.at.most(80);
  });

  describe('validation: required fields, limits and field types', () => {
    it('answers 422 "Summary is required" when task.summary is missing', () => expect422({ task: {} }, 'Summary is required'));
    it('answers 422 "Summary is required" when task.summary is blank', () => expect422({ task: { summary: '  \n ' } }, 'Summary is required'));
    it('answers 422 "Summary is required" when task is missing', () => expect422({}, 'Summary is required'));
    it('answers 422 "Summary is required" when there is no body at all', async () => {
      const res = await h.api.post('/api/v1/scribes/atlas/requests').set(t.headers);
      expect(res.status).to.equal(422);
      expect(res.body).to.deep.equal({ error: 'Summary is required' });
    });
    it('answers 422 "task must be an object" for a task that is not one', () => expect422({ task: 'do it' }, 'task must be an object'));
    it('answers 422 "Unsupported actor_kind" for another actor_kind', () => expect422({ actor_kind: 'agent', task: { summary: 'x' } }, 'Unsupported actor_kind'));
    it('answers 422 naming the field for a summary of the wrong type', () => expect422({ task: { summary: 42 } }, 'summary must be a string'));
    it('answers 422 "title must be a string" for a numeric title', () => expect422({ task: { summary: 'x', title: 7 } }, 'title must be a string'));
    it('answers 422 for acceptance_criteria of the wrong type', () => expect422({ task: { summary: 'x', acceptance_criteria: ['a'] } }, 'acceptance_criteria must be a string'));
    it('answers 422 "Maximum of 5 attachments allowed" for six', () =>
      expect422(
        { task: { summary: 'x', attachments: Array.from({ length: 6 }, () => ({ url: 'https://example.com/a', content_type: 'text/plain' })) } },
        'Maximum of 5 attachments allowed',
      ));
    it('answers 422 "Attachment url is required" for an attachment without url', () =>
      expect422({ task: { summary: 'x', attachments: [{ content_type: 'text/plain' }] } }, 'Attachment url is required'));
    it('answers 422 "Attachment url is required" for a blank url', () =>
      expect422({ task: { summary: 'x', attachments: [{ url: ' ', content_type: 'text/plain' }] } }, 'Attachment url is required'));
    it('answers 422 "Attachment content_type is required" for an attachment without one', () =>
      expect422({ task: { summary: 'x', attachments: [{ url: 'https://example.com/a' }] } }, 'Attachment content_type is required'));
    it('answers 422 "Attachment content_type is invalid" for a header injection, and stores nothing', async () => {
      await expect422(
        { task: { summary: 'injected', attachments: [{ url: 'https://example.com/a', content_type: 'text/plain\r\nX-Injected: 1' }] } },
        'Attachment content_type is invalid',
      );
      expect(await h.db('requests').where({ summary: 'injected' })).to.have.length(0);
    });
    for (const bad of [
      'text',
      'text/',
      '/plain',
      'text/plain/x',
      'text plain',
      'text/pl ain',
      'text/plain; charset=\u0001',
      'téxt/plain',
      'text/plain\u0000',
      // Parameters are `name=value`, the value a token or a quoted string.
      'text/plain; charset',
      'text/plain; a=b c',
      'text/plain; a=',
      'text/plain; =b',
      'text/plain; a="unclosed',
      // Longer than any registered type, and than the attachments' column holds.
      `text/plain; name=${'n'.repeat(240)}`,
    ]) {
      it(`answers 422 "Attachment content_type is invalid" for ${JSON.stringify(bad)}`, () =>
        expect422({ task: { summary: 'x', attachments: [{ url: 'https://example.com/a', content_type: bad }] } }, 'Attachment content_type is invalid'));
    }
    for (const [field, task] of [
      ['summary', { summary: 'a\u0000b' }],
      ['title', { summary: 'x', title: 'a\u0000b' }],
      ['acceptance_criteria', { summary: 'x', acceptance_criteria: '\u0000' }],
      ['Attachment url', { summary: 'x', attachments: [{ url: 'https://example.com/\u0000', content_type: 'text/plain' }] }],
      ['Attachment filename', { summary: 'x', attachments: [{ url: 'https://example.com/a', content_type: 'text/plain', filename: 'a\u0000.txt' }] }],
    ] as const) {
      it(`answers 422 "${field} must not contain U+0000" (no database stores it), storing nothing`, () => expect422({ task }, `${field} must not contain U+0000`));
    }
    it('answers 422 "attachments must be an array" for an object', () => expect422({ task: { summary: 'x', attachments: { url: 'x' } } }, 'attachments must be an array'));
    it('answers 422 for an attachment that is not an object', () =>
      expect422({ task: { summary: 'x', attachments: ['https://example.com/a'] } }, 'Each attachment must be an object'));
    it('answers 422 for a title over 200 characters, and accepts one of 200', async () => {
      await expect422({ task: { summary: 'x', title: 't'.repeat(201) } }, 'title must be at most 200 characters');
      expect((await submit({ task: { summary: 'x', title: 't'.repeat(200) } })).status).to.equal(202);
    });
    it('answers 422 naming attachment fields of the wrong type', async () => {
      await expect422({ task: { summary: 'x', attachments: [{ url: 5, content_type: 'text/plain' }] } }, 'Attachment url must be a string');
      await expect422({ task: { summary: 'x', attachments: [{ url: 'https://a.example/x', content_type: true }] } }, 'Attachment content_type must be a string');
      await expect422({ task: { summary: 'x', attachments: [{ url: 'https://a.example/x', content_type: 'text/plain', filename: 1 }] } }, 'Attachment filename must be a string');
    });
    it('treats null optional fields as omitted', async () => {
      const res = await submit({ actor_kind: null, task: { summary: 'x', title: null, acceptance_criteria: null, attachments: null } });
      expect(res.status).to.equal(202);
    });
    it('answers 422 "Summary is required" for a null summary', () => expect422({ task: { summary: null } }, 'Summary is required'));
    it('answers 422 "Request body must be a JSON object" for a JSON array', () => expect422([{ task: {} }], 'Request body must be a JSON object'));
  });

  describe('precedence (actor_kind, summary, count, each attachment in turn)', () => {
    const six = Array.from({ length: 6 }, () => ({}));
    it('puts actor_kind first', () => expect422({ actor_kind: 'x', task: { attachments: six } }, 'Unsupported actor_kind'));
    it('puts Summary before the attachment count', () => expect422({ task: { summary: '', attachments: six } }, 'Summary is required'));
    it('puts the attachment count before attachment fields', () => expect422({ task: { summary: 'x', attachments: six } }, 'Maximum of 5 attachments allowed'));
    it('checks each attachment in turn, url before content_type', async () => {
      await expect422({ task: { summary: 'x', attachments: [{ url: 'https://a.example/x' }, {}] } }, 'Attachment content_type is required');
      await expect422({ task: { summary: 'x', attachments: [{}, { url: 'https://a.example/x' }] } }, 'Attachment url is required');
    });
    it('puts an invalid content_type where a missing one would stand', async () => {
      await expect422({ task: { summary: 'x', attachments: [{ url: 'https://a.example/x', content_type: 'bad' }, {}] } }, 'Attachment content_type is invalid');
      await expect422({ task: { summary: 'x', attachments: [{ content_type: 'bad' }] } }, 'Attachment url is required');
      await expect422({ task: { summary: 'x', attachments: [{ url: 'https://a.example/x', content_type: ' ' }] } }, 'Attachment content_type is required');
    });
    it('accepts media types with parameters, in any case', async () => {
      const powered = await h.tenant({ slug: 'typed', state: 'powered_off' });
      for (const type of [
        'text/plain; charset=utf-8',
        'Application/PDF',
        'application/vnd.ms-excel',
        'text/plain; charset="utf-8"',
        'text/plain;charset=utf-8;format=flowed',
        'text/plain; name="a \\"quoted\\" b"',
        // Empty parameters are allowed by HTTP's grammar.
        'text/plain;',
      ]) {
        // A powered-off scribe answers once the body passed validation, before any download.
        const res = await submit({ task: { summary: 'x', attachments: [{ url: 'https://a.example/x', content_type: type }] } }, powered);
        expect(res.body, type).to.deep.equal({ error: 'Scribe is not active' });
      }
    });
    it('puts body validation before "Scribe is not active"', async () => {
      const off = await h.tenant({ slug: 'sleepy', state: 'powered_off' });
      const res = await submit({ task: {} }, off);
      expect(res.status).to.equal(422);
      expect(res.body).to.deep.equal({ error: 'Summary is required' });
    });
    it('puts "Scribe is not active" before attachment downloads', async () => {
      const off = await h.tenant({ slug: 'sleepy2', state: 'powered_off' });
      const res = await submit({ task: { summary: 'x', attachments: [{ url: 'ftp://nowhere/x', content_type: 'text/plain' }] } }, off);
      expect(res.status).to.equal(422);
      expect(res.body).to.deep.equal({ error: 'Scribe is not active' });
    });
  });

  describe('scribe rules (6, 7)', () => {
    it('answers 422 "Scribe is not active" for a powered-off scribe', async () => {
      const off = await h.tenant({ slug: 'off', state: 'powered_off' });
      const res = await submit({ task: { summary: 'x' } }, off);
      expect(res.status).to.equal(422);
      expect(res.body).to.deep.equal({ error: 'Scribe is not active' });
      expect(await h.db('requests').where({ scribe_id: off.scribe.id })).to.have.length(0);
    });

    it('answers 422 "Scribe is not active" for an unprovisioned scribe', async () => {
      const un = await h.tenant({ slug: 'raw', state: 'unprovisioned' });
      const res = await submit({ task: { summary: 'x' } }, un);
      expect(res.status).to.equal(422);
      expect(res.body).to.deep.equal({ error: 'Scribe is not active' });
    });

    it('answers 404 "Scribe not found" for an unknown slug, before validating the body', async () => {
      const res = await submit({ task: {} }, t, 'nobody');
      expect(res.status).to.equal(404);
      expect(res.body).to.deep.equal({ error: 'Scribe not found' });
    });

    it('answers 404 "Scribe not found" for a slug that is not a valid slug', async () => {
      const res = await submit({ task: { summary: 'x' } }, t, 'NOT%20A%20SLUG');
      expect(res.status).to.equal(404);
      expect(res.body).to.deep.equal({ error: 'Scribe not found' });
    });

    it("answers 404 for another organization's scribe, exactly as for a missing one", async () => {
      const other = await h.tenant({ slug: 'theirs' });
      const res = await submit({ task: { summary: 'x' } }, t, other.scribe.slug);
      expect(res.status).to.equal(404);
      expect(res.body).to.deep.equal({ error: 'Scribe not found' });
      expect(await h.db('requests').where({ scribe_id: other.scribe.id })).to.have.length(0);
    });
  });
});
