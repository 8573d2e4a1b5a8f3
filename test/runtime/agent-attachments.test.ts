import { expect } from 'chai';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { createHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { startFakeOpenAi } from '../helpers/fake-openai.js';
import { startFileServer, type FileServer } from '../helpers/file-server.js';
import { INLINE_TEXT_CHARS } from '../../src/agents/attachments.js';

// A real 1×1 PNG.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
const CSV = 'company,city\nAcme,Zurich\nGlobex,Geneva\n';

async function quarterlyPdf(): Promise<Buffer> {
  const doc = await PDFDocument.create();
  doc.addPage().drawText('Quarterly revenue: 1,204,000 CHF', { x: 50, y: 700, size: 14, font: await doc.embedFont(StandardFonts.Helvetica) });
  return Buffer.from(await doc.save());
}

type Part = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

describe('attachments reach the agent', function () {
  this.timeout(20_000);
  let h: Harness;
  let fake: Awaited<ReturnType<typeof startFakeOpenAi>>;
  let files: FileServer;
  let t: Tenant;

  before(async () => {
    const pdf = await quarterlyPdf();
    files = await startFileServer({
      '/q3.pdf': (_req, res) => res.writeHead(200, { 'content-type': 'application/pdf' }).end(pdf),
      '/leads.csv': (_req, res) => res.writeHead(200).end(CSV),
      '/pixel.png': (_req, res) => res.writeHead(200).end(PNG),
      '/blob.bin': (_req, res) => res.writeHead(200).end(Buffer.alloc(3000, 7)),
      '/long.md': (_req, res) => res.writeHead(200).end('# Notes\n' + 'x'.repeat(INLINE_TEXT_CHARS + 500)),
    });
    fake = await startFakeOpenAi();
    h = await createHarness({
      env: { OPENAI_BASE_URL: fake.baseUrl, OPENAI_MODEL: 'test-model', OPENAI_MAX_RETRIES: '0' },
      options: { runOnNewWork: false, dispatchOnAccept: false, addressPolicy: (a) => a === '127.0.0.1' },
    });
    t = await h.tenant({ slug: 'oracle' });
    await h.services.scribes.setAgent(t.organizationId, 'oracle', { agent: 'openai' });
  });
  after(async () => {
    await h.close();
    await fake.close();
    await files.close();
  });
  beforeEach(() => {
    fake.seen.length = 0;
    fake.clear();
  });

  const attachments = () => [
    { url: `${files.url}/q3.pdf`, filename: 'q3.pdf', content_type: 'application/pdf' },
    { url: `${files.url}/leads.csv`, filename: 'leads.csv', content_type: 'text/csv' },
    { url: `${files.url}/pixel.png`, filename: 'pixel.png', content_type: 'image/png' },
    { url: `${files.url}/blob.bin`, filename: 'blob.bin', content_type: 'application/octet-stream' },
  ];

  async function workTask(slug: string, headers: Record<string, string>, files: object[]): Promise<string> {
    const res = await h.api
      .post(`/api/v1/scribes/${slug}/requests`)
      .set(headers)
      .send({ task: { summary: 'Read the files', acceptance_criteria: 'A note', attachments: files } });
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    await h.services.dispatcher.tick();
    await h.services.runtime.tick();
    return (await h.api.get(`/api/v1/requests/${res.body.request.id}`).set(headers)).body.request.entity_id;
  }
  const firstMessageParts = () => fake.seen[0]!.body.messages[1]!.content as unknown as Part[];

  it("gives the model a PDF's text and a CSV inline, names a file it cannot read, and no image part while the model cannot see", async () => {
    fake.script({ reply: 'Read them.' });
    await workTask('oracle', t.headers, attachments());
    const parts = firstMessageParts();
    expect(parts[0]).to.deep.include({ type: 'text' });
    expect((parts[0] as { text: string }).text)
      .to.include('Task: Read the files')
      .and.include('The task came with these 4 files:');
    const texts = parts.filter((p): p is { type: 'text'; text: string } => p.type === 'text').map((p) => p.text);
    expect(texts[1])
      .to.match(/^Attachment 1: q3\.pdf \(application\/pdf, [\d.]+ (KiB|bytes)\), its text\n-----\n/)
      .and.include('Quarterly revenue: 1,204,000 CHF');
    expect(texts[2]).to.equal(`Attachment 2: leads.csv (text/csv, ${CSV.length} bytes)\n-----\n${CSV}\n-----`);
    expect(texts[3]).to.equal('Attachment 3: pixel.png (image/png, 70 bytes): an image, not shown (this model is not marked as able to see images).');
    expect(texts[4]).to.equal('Attachment 4: blob.bin (application/octet-stream, 2.9 KiB): not given to you (it cannot be read as text).');
    expect(parts.some((p) => p.type === 'image_url')).to.equal(false);
  });

  it("sends an image as an image part when the scribe's model can see", async () => {
    await h.services.scribes.setAgent(t.organizationId, 'oracle', { vision: true });
    try {
      fake.script({ reply: 'A pixel.' });
      await workTask('oracle', t.headers, [attachments()[2]!]);
      const parts = firstMessageParts();
      expect(parts.map((p) => p.type)).to.deep.equal(['text', 'text', 'image_url']);
      expect((parts[2] as { image_url: { url: string } }).image_url.url).to.equal(`data:image/png;base64,${PNG.toString('base64')}`);
    } finally {
      await h.services.scribes.setAgent(t.organizationId, 'oracle', { vision: false });
    }
  });

  it('cuts a long text attachment and says so', async () => {
    fake.script({ reply: 'Long.' });
    await workTask('oracle', t.headers, [{ url: `${files.url}/long.md`, filename: 'long.md', content_type: 'text/markdown' }]);
    const text = (firstMessageParts()[1] as { text: string }).text;
    const total = '# Notes\n'.length + INLINE_TEXT_CHARS + 500;
    expect(text.split('\n')[0]).to.equal(
      `Attachment 1: long.md (text/markdown, ${Number((total / 1024).toFixed(1))} KiB) (cut: the first 20,000 of ${total.toLocaleString('en')} characters)`,
    );
    expect(text.length).to.be.below(INLINE_TEXT_CHARS + 300);
  });

  it('has the builtin agent name each attachment it was given in its result', async () => {
    const plain = await h.tenant({ slug: 'plain' });
    const taskId = await workTask('plain', plain.headers, attachments().slice(1, 3));
    const task = await h.db('tasks').where({ id: taskId }).first();
    expect(task.status).to.equal('done');
    expect(task.result.split('\n').at(-1)).to.equal(`Attachments: leads.csv (text/csv, ${CSV.length} bytes); pixel.png (image/png, 70 bytes)`);
  });
});
