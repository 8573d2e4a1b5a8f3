import net from 'node:net';
import fs from 'node:fs';
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import nodemailer from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { createHarness, staffOf, type Harness, type Tenant } from '../helpers/harness.js';
import { startSmtpListener, type SmtpListener } from '../../src/channels/smtp.js';
import { createLogger } from '../../src/logger.js';
import { loadConfig } from '../../src/config.js';

/** A real SMTP conversation: nodemailer as the sending client, the app's listener on loopback. */
describe('inbound email channels', () => {
  let h: Harness;
  let t: Tenant;
  let smtp: SmtpListener;
  let send: (message: Mail.Options) => Promise<{ response: string; accepted: unknown[]; rejected: unknown[] }>;

  before(async () => {
    h = await createHarness({ options: { dispatchOnAccept: false, runOnNewWork: false } });
    t = await h.tenant();
    smtp = await startSmtpListener({ host: '127.0.0.1', port: 0, channels: h.services.channels, logger: createLogger('silent') });
    const transport = nodemailer.createTransport({ host: '127.0.0.1', port: smtp.port, secure: false, ignoreTLS: true });
    send = (message) => transport.sendMail({ from: 'Ada Lovelace <ada@example.org>', ...message });
  });
  after(async () => {
    await smtp?.close();
    await h?.close();
  });

  let addresses = 0;
  const create = async (mode: 'task' | 'chat' = 'task', scribe = t.scribe.slug, tenant = t) => {
    const address = `scribe-${++addresses}@inbound.example.com`;
    const { channel } = await h.services.channels.create(staffOf(tenant), scribe, { kind: 'email', address: address.toUpperCase(), mode });
    return { channel, address };
  };
  const receiptsOf = (channelId: string) => h.db('requests').where({ origin_type: 'channel', origin_id: channelId }).select('id', 'title', 'summary');
  const deliveries = (channelId: string) => h.db('channel_deliveries').where({ channel_id: channelId }).orderBy('received_at').select('sender', 'outcome', 'status', 'reason', 'request_id', 'session_id');
  /** The SMTP refusal of a message, or a failed test when it was accepted. */
  const refused = (sending: Promise<unknown>) =>
    sending.then(
      () => expect.fail('the message was accepted'),
      (err: unknown) => err as { responseCode: number; response: string },
    );

  it('survives a client that resets its connection mid-conversation, and takes the next message', async () => {
    const { channel } = await h.services.channels.create(staffOf(t), 'atlas', { kind: 'email', address: 'reset@inbound.example.com' });
    const socket = net.connect(smtp.port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('data', () => resolve()));
    socket.write('EHLO rude.example.org\r\n');
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.resetAndDestroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await send({ to: 'reset@inbound.example.com', subject: 'Still here?', text: 'Yes.' });
    expect(await h.db('channel_deliveries').where({ channel_id: channel.id, outcome: 'created' })).to.have.length(1);
  });

  it('keeps the address lower-cased, refuses one taken by another channel, and takes config from SMTP_PORT / SMTP_HOST', async () => {
    const { channel, address } = await create();
    expect(channel.address).to.equal(address);
    const err = await h.services.channels.create(staffOf(t), t.scribe.slug, { kind: 'email', address }).catch((e: Error & { status: number }) => e);
    expect(err).to.include({ status: 422, message: 'Another channel already receives mail at this address' });
    expect(loadConfig({}).smtp).to.equal(undefined);
    expect(loadConfig({ SMTP_PORT: '2525' }).smtp).to.deep.equal({ port: 2525, host: '127.0.0.1' });
    expect(loadConfig({ SMTP_PORT: '25', SMTP_HOST: '0.0.0.0' }).smtp).to.deep.equal({ port: 25, host: '0.0.0.0' });
    expect(() => loadConfig({ SMTP_PORT: 'mail' })).to.throw('Invalid configuration: SMTP_PORT must be a port number');
  });

  it('makes a task of a message with an attachment: subject → title, text → summary, the file stored as the API stores one', async () => {
    const { channel, address } = await create();
    const report = Buffer.from('%PDF-1.4\nquarterly figures\n%%EOF\n');
    const info = await send({
      to: address,
      subject: 'Quarterly report',
      text: 'Please summarize the attached report by Friday.',
      html: '<p>Please <b>summarize</b> the attached report by Friday.</p>',
      attachments: [{ filename: 'report.pdf', content: report, contentType: 'application/pdf' }],
    });
    expect(info.response).to.match(/^250 /);
    const [receipt] = await receiptsOf(channel.id);
    expect(receipt).to.include({ title: 'Quarterly report', summary: 'Please summarize the attached report by Friday.' });
    const [file] = await h.db('attachments').where({ request_id: receipt!.id }).select('filename', 'content_type', 'size_bytes', 'sha256', 'url');
    const sha256 = createHash('sha256').update(report).digest('hex');
    expect(file).to.deep.include({ filename: 'report.pdf', content_type: 'application/pdf', sha256, url: 'mailto:ada@example.org' });
    expect(Number(file!.size_bytes)).to.equal(report.length);
    expect(fs.readFileSync(h.services.attachmentStore.pathFor(sha256))).to.deep.equal(report);
    expect(await deliveries(channel.id)).to.deep.equal([{ sender: '"Ada Lovelace" <ada@example.org>', outcome: 'created', status: 250, reason: null, request_id: receipt!.id, session_id: null }]);
    const event = await h.db('audit_events').where({ subject_id: receipt!.id }).first();
    expect(event).to.include({ action: 'request.submit', actor_type: 'channel', actor_label: `channel: ${address}` });
  });

  it('reduces an HTML-only message to text', async () => {
    const { channel, address } = await create();
    await send({ to: address, subject: 'Menu', html: '<h1>Lunch</h1><p>Soup &amp; <i>bread</i></p><script>alert(1)</script>' });
    const [receipt] = await receiptsOf(channel.id);
    expect(receipt!.summary).not.to.match(/<|&amp;|alert/);
    expect(receipt!.summary).to.match(/LUNCH|Lunch/);
    expect(receipt!.summary).to.include('Soup & bread');
  });

  it('uses the subject when there is no text, and says so when there is neither', async () => {
    const { channel, address } = await create();
    await send({ to: address, subject: 'Only a subject', text: '' });
    await send({ to: address, text: '' });
    const summaries = (await receiptsOf(channel.id)).map((r) => r.summary).sort();
    expect(summaries).to.deep.equal(['(an empty message from "Ada Lovelace" <ada@example.org>)', 'Only a subject']);
  });

  it('makes a chat message in chat mode, naming the attachments it cannot keep', async () => {
    const { channel, address } = await create('chat');
    await send({ to: address, subject: 'Hello', text: 'Is the office open on Monday?', attachments: [{ filename: 'map.png', content: Buffer.from([137, 80, 78, 71]) }] });
    const [delivery] = await deliveries(channel.id);
    const session = await h.services.sessions.get(t.organizationId, delivery!.session_id);
    expect(session.messages.map((m) => m.text)).to.deep.equal(['Is the office open on Monday?\n\n(Attachments not kept in a chat: map.png)']);
  });

  it('refuses an unknown or disabled recipient at RCPT TO with 550, creating nothing', async () => {
    const err = await refused(send({ to: 'nobody@inbound.example.com', text: 'hi' }));
    expect(err.responseCode).to.equal(550);
    expect(err.response).to.include('nobody@inbound.example.com');

    const { channel, address } = await create();
    await h.services.channels.setEnabled(staffOf(t), channel.id, false);
    expect((await refused(send({ to: address, text: 'hi' }))).responseCode).to.equal(550);
    expect(await deliveries(channel.id)).to.deep.equal([]);
  });

  it('delivers to the known recipients of a message and refuses the unknown ones', async () => {
    const { channel, address } = await create();
    const info = await send({ to: [address, 'nobody@inbound.example.com'], subject: 'Both', text: 'one of two' });
    expect(info.accepted).to.deep.equal([address]);
    expect(info.rejected).to.deep.equal(['nobody@inbound.example.com']);
    expect(await receiptsOf(channel.id)).to.have.length(1);
  });

  it('refuses a message over 25 MiB with 552 and keeps nothing of it', async function () {
    this.timeout(60_000);
    const { channel, address } = await create();
    const files = fs.readdirSync(h.services.attachmentStore.pathFor('00').replace(/\/00\/00$/, ''), { recursive: true }).length;
    const err = await refused(send({ to: address, text: 'big', attachments: [{ filename: 'big.bin', content: Buffer.alloc(26 * 1024 * 1024, 7) }] }));
    expect(err.responseCode).to.equal(552);
    expect(await receiptsOf(channel.id)).to.deep.equal([]);
    expect(fs.readdirSync(h.services.attachmentStore.pathFor('00').replace(/\/00\/00$/, ''), { recursive: true }).length).to.equal(files);
  });

  it('refuses more than 5 attachments with 550 "Maximum of 5 attachments allowed"', async () => {
    const { channel, address } = await create();
    const attachments = Array.from({ length: 6 }, (_, i) => ({ filename: `f${i}.txt`, content: `file ${i}` }));
    const err = await refused(send({ to: address, text: 'many', attachments }));
    expect(err.responseCode).to.equal(550);
    expect(err.response).to.include('Maximum of 5 attachments allowed');
    expect(await receiptsOf(channel.id)).to.deep.equal([]);
    expect((await deliveries(channel.id))[0]).to.include({ outcome: 'refused', status: 550, reason: 'Maximum of 5 attachments allowed' });
  });

  it('refuses mail for a scribe that is not active with 550 "Scribe is not active"', async () => {
    const off = await h.tenant({ slug: 'resting', state: 'powered_off' });
    const { channel, address } = await create('task', 'resting', off);
    const err = await refused(send({ to: address, text: 'anyone?' }));
    expect(err.responseCode).to.equal(550);
    expect(err.response).to.include('Scribe is not active');
    expect((await deliveries(channel.id))[0]).to.include({ outcome: 'refused', status: 550 });
  });

  it('creates nothing new for the same Message-ID sent again (a sending server retrying)', async () => {
    const { channel, address } = await create();
    const message = { to: address, subject: 'Once', text: 'only once', messageId: '<retry-1@mail.example.org>' };
    await send(message);
    const again = await send(message);
    expect(again.response).to.match(/^250 /);
    expect(await receiptsOf(channel.id)).to.have.length(1);
    expect((await deliveries(channel.id)).map((d) => d.outcome)).to.deep.equal(['created', 'replayed']);
  });
});
