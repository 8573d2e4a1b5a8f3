import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import { simpleParser, type AddressObject } from 'mailparser';
import type { Logger } from '../logger.js';
import type { ChannelService, InboundMail } from './service.js';

/** The largest message taken (contract: 25 MiB); a larger one is refused with 552. */
export const MAX_MESSAGE_BYTES = 25 * 1024 * 1024;

/** An SMTP reply smtp-server sends for a refusal (its `responseCode`). */
const reply = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code });

export interface SmtpListener {
  /** The port it listens on (the one given, or the one chosen for port 0). */
  port: number;
  close(): Promise<void>;
}

/**
 * The SMTP listener of email channels (smtp-server, mailparser): mail to an enabled
 * channel's address becomes its task or chat message. Unknown recipients are refused at
 * RCPT TO with 550, a message over 25 MiB with 552 (smtp-server enforces the SIZE it
 * advertises). No AUTH and no STARTTLS: it sits behind the host's own mail server, or on
 * loopback, as SMTP_HOST's default says.
 */
export async function startSmtpListener({ host, port, channels, logger }: { host: string; port: number; channels: ChannelService; logger: Logger }): Promise<SmtpListener> {
  const server = new SMTPServer({
    banner: 'Scribe inbound mail',
    size: MAX_MESSAGE_BYTES,
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    logger: false,
    onRcptTo(address, _session, callback) {
      channels.emailChannel(address.address).then(
        (channel) => callback(channel ? undefined : reply(550, `No mailbox here by that name: ${address.address}`)),
        (err: Error) => {
          logger.error({ err }, 'could not look up an email channel');
          callback(reply(451, 'Try again later'));
        },
      );
    },
    onData(stream, session, callback) {
      receive(stream, session).then(
        (answer) => callback(answer instanceof Error ? answer : null, answer instanceof Error ? undefined : answer),
        (err: Error) => {
          logger.error({ err }, 'could not take an inbound email');
          callback(reply(451, 'Try again later'));
        },
      );
    },
  });

  /** Reads the message (at most the cap), parses it and hands it to each recipient's channel. */
  async function receive(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string | Error> {
    const chunks: Buffer[] = [];
    for await (const chunk of stream) if (!stream.sizeExceeded) chunks.push(chunk as Buffer);
    // smtp-server answers 552 itself; nothing is kept.
    if (stream.sizeExceeded) return reply(552, `Message exceeds ${MAX_MESSAGE_BYTES} bytes`);

    const parsed = await simpleParser(Buffer.concat(chunks));
    const envelopeFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
    const mail: InboundMail = {
      from: addressText(parsed.from) || envelopeFrom || 'unknown sender',
      envelopeFrom: envelopeFrom || 'unknown',
      subject: parsed.subject ?? '',
      // mailparser reduces an HTML-only message to text itself.
      text: parsed.text ?? '',
      messageId: parsed.messageId ?? null,
      attachments: parsed.attachments.map((a) => ({ filename: a.filename ?? null, contentType: a.contentType, content: a.content })),
    };

    const refusals: string[] = [];
    for (const recipient of session.envelope.rcptTo) {
      const channel = await channels.emailChannel(recipient.address);
      if (!channel) continue;
      const result = await channels.receiveEmail(channel, mail);
      logger.info({ channelId: channel.id, code: result.code, made: result.made }, 'inbound email');
      if (result.code !== 250) refusals.push(result.message);
    }
    // One reply for all recipients (SMTP): refused only when every channel refused it.
    return refusals.length === session.envelope.rcptTo.length && refusals.length > 0 ? reply(550, refusals[0]!) : 'Accepted';
  }

  // smtp-server re-emits its socket's errors: a port in use arrives here.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // Later errors are a client's (a dropped connection): logged, never fatal (an 'error'
  // event without a listener would end the process).
  server.on('error', (err) => logger.warn({ err }, 'SMTP connection error'));
  return {
    port: (server.server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function addressText(from: AddressObject | AddressObject[] | undefined): string {
  const first = Array.isArray(from) ? from[0] : from;
  return first?.text ?? '';
}
