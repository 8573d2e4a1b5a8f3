import net from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import nodemailer from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { createHarness, eventually, staffOf, type Harness, type Tenant } from '../helpers/harness.js';
import { startSmtpListener, type SmtpLimits, type SmtpListener } from '../../src/channels/smtp.js';
import { createLogger } from '../../src/logger.js';
import { loadConfig } from '../../src/config.js';
import { deliverRaw, dial } from '../helpers/smtp-dialer.js';

/** A real SMTP conversation: nodemailer as the sending client, the app's listener on loopback. */
describe('inbound email channels', () => {
  let h: Harness;
  let t: Tenant;
  let smtp: SmtpListener;
  let send: (message: Mail.Options) => Promise<{ response: string; accepted: unknown[]; rejected: unknown[] }>;

  /** The app's listener on loopback, with the limits a test sets. */
  const listen = (limits: Partial<SmtpLimits> = {}) =>
    startSmtpListener({ host: '127.0.0.1', port: 0, channels: h.services.channels, store: h.services.attachmentStore, logger: createLogger('silent'), limits });

  before(async () => {
    h = await createHarness({ options: { dispatchOnAccept: false, runOnNewWork: false } });
    t = await h.tenant();
    smtp = await listen();
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
  const deliveries = (channelId: string) =>
    h.db('channel_deliveries').where({ channel_id: channelId }).orderBy('received_at').select('sender', 'outcome', 'status', 'reason', 'request_id', 'session_id');
  const filesOf = (requestId: string) => h.db('attachments').where({ request_id: requestId }).orderBy('position').select('filename', 'content_type', 'size_bytes', 'sha256');
  const sha256Of = (content: Buffer | string) => createHash('sha256').update(content).digest('hex');
  /** Every file and folder of the attachment store, its temp folder included. */
  const storeEntries = () => fs.readdirSync(path.dirname(path.dirname(h.services.attachmentStore.pathFor('0000'))), { recursive: true }).length;
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

  it('keeps the address lower-cased, refuses one taken by another channel, and takes config from SMTP_PORT / SMTP_HOST / SMTP_MAX_CONNECTIONS', async () => {
    const { channel, address } = await create();
    expect(channel.address).to.equal(address);
    const err = await h.services.channels.create(staffOf(t), t.scribe.slug, { kind: 'email', address }).catch((e: Error & { status: number }) => e);
    expect(err).to.include({ status: 422, message: 'Another channel already receives mail at this address' });
    expect(loadConfig({}).smtp).to.equal(undefined);
    expect(loadConfig({ SMTP_PORT: '2525' }).smtp).to.deep.equal({ port: 2525, host: '127.0.0.1', maxConnections: 50 });
    expect(loadConfig({ SMTP_PORT: '25', SMTP_HOST: '0.0.0.0' }).smtp).to.deep.equal({ port: 25, host: '0.0.0.0', maxConnections: 50 });
    expect(() => loadConfig({ SMTP_PORT: 'mail' })).to.throw('Invalid configuration: SMTP_PORT must be a port number');
    expect(() => loadConfig({ SMTP_PORT: '25', SMTP_MAX_CONNECTIONS: 'many' })).to.throw('Invalid configuration: SMTP_MAX_CONNECTIONS must be a whole number');
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
    expect(await deliveries(channel.id)).to.deep.equal([
      { sender: '"Ada Lovelace" <ada@example.org>', outcome: 'created', status: 250, reason: null, request_id: receipt!.id, session_id: null },
    ]);
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

  it('takes a chat message with more than 5 attachments, which it does not keep, naming the first 10 and counting the rest', async () => {
    const { channel, address } = await create('chat');
    const attachments = Array.from({ length: 12 }, (_, i) => ({ filename: `logo${i}.png`, content: Buffer.from([137, 80, 78, 71, i]) }));
    expect((await send({ to: address, subject: 'Newsletter', text: 'Our news', attachments })).response).to.equal('250 Accepted');
    const [delivery] = await deliveries(channel.id);
    const session = await h.services.sessions.get(t.organizationId, delivery!.session_id);
    const named = attachments.slice(0, 10).map((a) => a.filename);
    expect(session.messages.map((m) => m.text)).to.deep.equal([`Our news\n\n(Attachments not kept in a chat: ${named.join(', ')} and 2 more)`]);
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
    const files = storeEntries();
    const err = await refused(send({ to: address, text: 'big', attachments: [{ filename: 'big.bin', content: Buffer.alloc(26 * 1024 * 1024, 7) }] }));
    expect(err.response).to.equal('552 Message exceeds 26214400 bytes');
    expect(await receiptsOf(channel.id)).to.deep.equal([]);
    // Refused before the channel read it, and in its delivery log all the same.
    expect(await deliveries(channel.id)).to.deep.equal([
      { sender: 'ada@example.org', outcome: 'refused', status: 552, reason: 'Message exceeds 26214400 bytes', request_id: null, session_id: null },
    ]);
    expect(storeEntries()).to.equal(files);
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

  it('takes a Message-ID over 200 characters, a From over 320 and a subject cut at an emoji, on both databases, and replays that Message-ID', async () => {
    const { channel, address } = await create();
    const messageId = `<${'a'.repeat(230)}@example.org>`;
    const from = `"${'B'.repeat(330)}" <bob@example.org>`;
    const message = { to: address, from, subject: `${'s'.repeat(199)}😀 tail`, text: 'long headers', messageId };
    expect((await send(message)).response).to.match(/^250 /);
    expect((await send(message)).response).to.match(/^250 /);
    const [receipt] = await receiptsOf(channel.id);
    expect(receipt!.title).to.equal('s'.repeat(199));
    const rows = await h.db('channel_deliveries').where({ channel_id: channel.id }).orderBy('received_at').select('outcome', 'sender', 'replay_key');
    expect(rows.map((r) => r.outcome)).to.deep.equal(['created', 'replayed']);
    // The From header as sent, cut to the 320 characters its column holds.
    expect(rows[0].sender).to.equal(from.slice(0, 320));
    expect(rows[0].replay_key).to.equal(`sha256:${sha256Of(messageId)}`);
  });

  it('keeps an attachment whose type the attachments cannot hold (over 255 characters) as application/octet-stream, on both databases', async () => {
    const { channel, address } = await create();
    const longType = `application/${'x'.repeat(300)}`;
    const info = await send({ to: address, subject: 'Odd type', text: 'see file', attachments: [{ filename: 'data', content: 'payload', contentType: longType }] });
    expect(info.response).to.match(/^250 /);
    const [receipt] = await receiptsOf(channel.id);
    expect((await filesOf(receipt!.id)).map((f) => [f.filename, f.content_type])).to.deep.equal([['data', 'application/octet-stream']]);
  });

  it('refuses with 550 a message whose only channel was disabled between RCPT TO and DATA, and creates nothing', async () => {
    const { channel, address } = await create();
    const client = dial(smtp.port);
    try {
      await client.reply();
      await client.command('EHLO sender.example.org');
      await client.command('MAIL FROM:<ada@example.org>');
      expect(await client.command(`RCPT TO:<${address}>`)).to.match(/^250 /);
      await h.services.channels.setEnabled(staffOf(t), channel.id, false);
      expect(await client.command('DATA')).to.match(/^354 /);
      client.socket.write('Subject: race lost\r\n\r\nToo late.\r\n');
      expect(await client.command('.')).to.equal(`550 No mailbox here by that name: ${address}`);
    } finally {
      client.socket.end('QUIT\r\n');
    }
    expect(await receiptsOf(channel.id)).to.deep.equal([]);
  });

  it('logs a fault of its own after the whole message is in as an error, answering 451, and a sender that went away mid-message at info', async () => {
    const lines: string[] = [];
    const logger = createLogger('info', { destination: { write: (line: string) => void lines.push(line) } });
    const failing = { ...h.services.channels, receiveEmail: async () => Promise.reject(new Error('the database is down')) };
    const listener = await startSmtpListener({ host: '127.0.0.1', port: 0, channels: failing, store: h.services.attachmentStore, logger });
    try {
      const { address } = await create();
      expect(await deliverRaw(listener.port, 'ada@example.org', address, Buffer.from('Subject: hello\r\n\r\nHi.\r\n'))).to.equal('451 Try again later');
      const cut = dial(listener.port);
      await cut.reply();
      for (const line of ['EHLO sender.example.org', 'MAIL FROM:<ada@example.org>', `RCPT TO:<${address}>`, 'DATA']) await cut.command(line);
      cut.socket.write('Subject: half\r\n\r\nThe message beg');
      await new Promise((resolve) => setTimeout(resolve, 50));
      cut.socket.destroy();
      await cut.closed;
      const logged = () => lines.map((line) => JSON.parse(line) as { level: number; msg: string; err?: { message: string } }).filter((l) => /inbound email/.test(l.msg));
      await eventually(async () => (logged().length >= 2 ? true : undefined));
      expect(logged().map((l) => [l.level, l.msg])).to.deep.equal([
        [50, 'could not take an inbound email'],
        [30, 'an inbound email was cut off'],
      ]);
      expect(logged()[0]!.err?.message).to.equal('the database is down');
    } finally {
      await listener.close();
    }
  });

  describe('size discipline', () => {
    /** `lines` numbered lines of 100 bytes: text that a cut in the wrong place shows. */
    const numberedText = (lines: number, ending: string) =>
      Buffer.from(Array.from({ length: lines }, (_, i) => `${String(i).padStart(8, '0')} ${'abcdefghi '.repeat(9)}x${ending}`).join(''));
    const raw = (headers: string[], body: Buffer | string) => Buffer.concat([Buffer.from([...headers, '', ''].join('\r\n')), Buffer.from(body)]);
    const sendRaw = (to: string, message: Buffer | string) => send({ envelope: { from: 'ada@example.org', to: [to] }, raw: message });

    it('keeps the first 64 KiB of each of twelve 24 MiB texts sent at once as its summary and the whole text as message.txt, in bounded memory', async function () {
      this.timeout(60_000);
      const { channel, address } = await create();
      const lines = Math.floor((24 * 1024 * 1024) / 100);
      const text = numberedText(lines, '\n');
      const message = raw(
        ['From: Ada Lovelace <ada@example.org>', 'Subject: The long letter', 'MIME-Version: 1.0', 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: 8bit'],
        numberedText(lines, '\r\n'),
      );

      const before = process.memoryUsage().rss;
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
      const answers = await Promise.all(Array.from({ length: 12 }, () => deliverRaw(smtp.port, 'ada@example.org', address, message))).finally(() => clearInterval(sampler));
      // The whole text held once per message would be 288 MiB more, and more than one copy of it is usual.
      expect((peak - before) / 2 ** 20).to.be.below(300);

      expect(answers).to.deep.equal(Array(12).fill('250 Accepted'));
      const receipts = await receiptsOf(channel.id);
      expect(receipts).to.have.length(12);
      const summary = text.subarray(0, 64 * 1024).toString();
      expect(summary).to.have.length(65_536);
      const sha256 = sha256Of(text);
      for (const receipt of receipts) {
        expect(receipt.summary).to.equal(summary);
        const files = await filesOf(receipt.id);
        expect(files.map((f) => ({ ...f, size_bytes: Number(f.size_bytes) }))).to.deep.equal([
          { filename: 'message.txt', content_type: 'text/plain; charset=utf-8', size_bytes: text.length, sha256 },
        ]);
      }
      const stored = fs.readFileSync(h.services.attachmentStore.pathFor(sha256));
      expect(stored.length).to.equal(text.length);
      expect(sha256Of(stored)).to.equal(sha256);
      expect(fs.readdirSync(path.dirname(await h.services.attachmentStore.tempFile()))).to.deep.equal([]);
    });

    it('cuts the summary back to a whole character, and a chat keeps the same beginning and says the message goes on', async () => {
      // 90,000 bytes of UTF-8; 21,845 characters of 3 bytes fit 64 KiB, the next one would cross it.
      const text = '€'.repeat(30_000);
      const task = await create();
      await send({ to: task.address, subject: 'Euros', text });
      const [receipt] = await receiptsOf(task.channel.id);
      expect(receipt!.summary).to.equal('€'.repeat(21_845));
      const [file] = await filesOf(receipt!.id);
      expect({ ...file, size_bytes: Number(file!.size_bytes) }).to.deep.equal({
        filename: 'message.txt',
        content_type: 'text/plain; charset=utf-8',
        size_bytes: 90_000,
        sha256: sha256Of(text),
      });

      const chat = await create('chat');
      await send({ to: chat.address, subject: 'Euros', text });
      const [delivery] = await deliveries(chat.channel.id);
      const session = await h.services.sessions.get(t.organizationId, delivery!.session_id);
      expect(session.messages.map((m) => m.text)).to.deep.equal([`${'€'.repeat(21_845)}\n\n(The message goes on: a chat keeps its first 64 KiB)`]);
    });

    it('reduces a long HTML-only message to text: its first 64 KiB the summary, all of it message.txt, and HTML over 1 MiB kept whole as message.html', async function () {
      this.timeout(20_000);
      const { channel, address } = await create();
      const html = Array.from({ length: 30_000 }, (_, i) => `<p>Paragraph ${String(i).padStart(6, '0')} of a long letter.</p>\n`).join('');
      expect(html.length).to.be.above(1024 * 1024);
      await send({ to: address, subject: 'Long letter', html });
      const [receipt] = await receiptsOf(channel.id);
      expect(receipt!.summary).to.match(/^Paragraph 000000 of a long letter\.\n\nParagraph 000001 /);
      expect(Buffer.byteLength(receipt!.summary)).to.be.within(64 * 1024 - 40, 64 * 1024);
      const files = await filesOf(receipt!.id);
      expect(files.map((f) => [f.filename, f.content_type])).to.deep.equal([
        ['message.txt', 'text/plain; charset=utf-8'],
        ['message.html', 'text/html; charset=utf-8'],
      ]);
      const whole = fs.readFileSync(h.services.attachmentStore.pathFor(files[0]!.sha256), 'utf8');
      expect(whole.startsWith(receipt!.summary)).to.equal(true);
      expect(whole).to.match(/Paragraph 020000 of a long letter\./);
      expect(files[1]!.sha256).to.equal(sha256Of(html));
    });

    it('answers the 51st connection at once with 421 and closes it, while the first 50 stay usable', async () => {
      const listener = await listen();
      const open = Array.from({ length: 50 }, () => dial(listener.port));
      try {
        for (const client of open) expect(await client.reply()).to.match(/^220 /);
        const extra = dial(listener.port);
        expect(await extra.reply()).to.match(/^421 .*Too many connected clients, try again in a moment$/);
        await extra.closed;
        for (const client of open) expect(await client.command('EHLO client.example.org')).to.match(/^250 /);
        // One leaves: there is room for one more.
        expect(await open[0]!.command('QUIT')).to.match(/^221 /);
        await open[0]!.closed;
        const next = dial(listener.port);
        open.push(next);
        expect(await next.reply()).to.match(/^220 /);
      } finally {
        for (const client of open) client.socket.destroy();
        await listener.close();
      }
    });

    it('closes with 421 a connection that has not finished its message by the deadline, however steadily it trickles', async () => {
      const listener = await listen({ messageDeadlineMs: 1000 });
      const { channel, address } = await create();
      const client = dial(listener.port);
      try {
        expect(await client.reply()).to.match(/^220 /);
        expect(await client.command('EHLO slow.example.org')).to.match(/^250 /);
        expect(await client.command('MAIL FROM:<slow@example.org>')).to.match(/^250 /);
        expect(await client.command(`RCPT TO:<${address}>`)).to.match(/^250 /);
        expect(await client.command('DATA')).to.match(/^354 /);
        // Never silent long enough for the idle timeout.
        const trickle = setInterval(() => client.socket.write('x'), 50);
        try {
          expect(await client.reply()).to.equal('421 Message not finished in time, closing connection');
          await client.closed;
        } finally {
          clearInterval(trickle);
        }
        expect(await deliveries(channel.id)).to.deep.equal([]);
      } finally {
        client.socket.destroy();
        await listener.close();
      }
    });

    it('refuses a message of 3,000 parts, or one nested 1,000 deep, with a permanent 552 and keeps nothing of it', async () => {
      const { channel, address } = await create();
      const files = storeEntries();
      const headers = ['From: Ada Lovelace <ada@example.org>', 'Subject: Bomb', 'MIME-Version: 1.0'];
      const parts = Array.from(
        { length: 3000 },
        (_, i) => `--b\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename="f${i}.bin"\r\n\r\n${i}\r\n`,
      );
      const wide = raw([...headers, 'Content-Type: multipart/mixed; boundary="b"'], `${parts.join('')}--b--\r\n`);
      const levels = Array.from({ length: 1000 }, (_, i) => i);
      const deep = raw(
        [...headers, 'Content-Type: multipart/mixed; boundary="b0"'],
        levels.map((i) => `--b${i}\r\nContent-Type: multipart/mixed; boundary="b${i + 1}"\r\n\r\n`).join('') + levels.map((i) => `--b${1000 - i}--\r\n`).join('') + '--b0--\r\n',
      );

      expect((await refused(sendRaw(address, wide))).response).to.equal('552 Message too complex: more than 1000 MIME parts');
      expect((await refused(sendRaw(address, deep))).response).to.equal('552 Message too complex: MIME parts nested more than 50 deep');
      const refusal = (reason: string) => ({ sender: 'ada@example.org', outcome: 'refused', status: 552, reason, request_id: null, session_id: null });
      expect(await deliveries(channel.id)).to.deep.equal([
        refusal('Message too complex: more than 1000 MIME parts'),
        refusal('Message too complex: MIME parts nested more than 50 deep'),
      ]);
      expect(storeEntries()).to.equal(files);
      // The connection is fine: a good message after them is taken.
      expect((await send({ to: address, subject: 'After the bombs', text: 'All clear.' })).response).to.equal('250 Accepted');
    });
  });
});
