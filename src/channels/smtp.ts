import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { Logger } from '../logger.js';
import type { AttachmentStore } from '../requests/attachments/store.js';
import type { ChannelService, InboundMail } from './service.js';
import { MAIL_LIMITS, MailRefused, type MailLimits, readMail } from './mail-reader.js';

export interface SmtpLimits extends MailLimits {
  /** Connections open at once (SMTP_MAX_CONNECTIONS); one more is answered 421 and closed. */
  maxConnections: number;
  /** A connection that has not finished a message this long after it opened, or after its previous message, is closed (421). */
  messageDeadlineMs: number;
  /** A connection silent this long is closed (421); trickling bytes resets it, the deadline above does not. */
  socketTimeoutMs: number;
}

export const SMTP_LIMITS: Readonly<SmtpLimits> = Object.freeze({ ...MAIL_LIMITS, maxConnections: 50, messageDeadlineMs: 10 * 60_000, socketTimeoutMs: 60_000 });

export const messages = {
  noMailbox: (address: string) => `No mailbox here by that name: ${address}`,
  tryLater: 'Try again later',
  tooSlow: 'Message not finished in time, closing connection',
};

/** An SMTP reply smtp-server sends for a refusal (its `responseCode`). */
const reply = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code });

export interface SmtpListener {
  /** The port it listens on (the one given, or the one chosen for port 0). */
  port: number;
  close(): Promise<void>;
}

/**
 * The SMTP listener of email channels (smtp-server; messages read as they stream in, by
 * mail-reader.ts): mail to an enabled channel's address becomes its task or chat message.
 * Unknown recipients are refused at RCPT TO with 550; a message over 25 MiB, with too many
 * parts or parts nested too deep with 552 (permanent: sending it again cannot help). At
 * most `maxConnections` at once, each closed when a message takes longer than
 * `messageDeadlineMs`. No AUTH and no STARTTLS: it sits behind the host's own mail server,
 * or on loopback, as SMTP_HOST's default says.
 */
export async function startSmtpListener({
  host,
  port,
  channels,
  store,
  logger,
  limits: given = {},
}: {
  host: string;
  port: number;
  channels: ChannelService;
  store: AttachmentStore;
  logger: Logger;
  limits?: Partial<SmtpLimits>;
}): Promise<SmtpListener> {
  const limits: SmtpLimits = { ...SMTP_LIMITS, ...given };
  /** Each connection's deadline for its current message, by session id. */
  const deadlines = new Map<string, NodeJS.Timeout>();

  const server = new SMTPServer({
    banner: 'Scribe inbound mail',
    size: limits.maxBytes,
    maxClients: limits.maxConnections,
    socketTimeout: limits.socketTimeoutMs,
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    // Nothing reads the client's host name: a DNS query per connection is work for nothing.
    disableReverseLookup: true,
    logger: false,
    onConnect(session, callback) {
      startDeadline(session.id);
      callback();
    },
    onClose(session) {
      clearTimeout(deadlines.get(session.id));
      deadlines.delete(session.id);
    },
    onRcptTo(address, _session, callback) {
      channels.emailChannel(address.address).then(
        (channel) => callback(channel ? undefined : reply(550, messages.noMailbox(address.address))),
        (err: Error) => {
          logger.error({ err }, 'could not look up an email channel');
          callback(reply(451, messages.tryLater));
        },
      );
    },
    onData(stream, session, callback) {
      // Once the whole message is in, the deadline waits for our answer, not for the sender.
      let whole = false;
      stream.once('end', () => {
        whole = true;
        clearTimeout(deadlines.get(session.id));
      });
      const answer = (err: Error | null, message?: string) => {
        // This message is finished: the next one has a deadline of its own (unless the connection is gone).
        if (deadlines.has(session.id)) startDeadline(session.id);
        callback(err, message);
      };
      receive(stream, session).then(
        (result) => (result instanceof Error ? answer(result) : answer(null, result)),
        (err: Error) => {
          if (err instanceof MailRefused) return answer(err);
          // A sender that went away mid-message (or was closed at its deadline) hears nothing anyway.
          // Once the message was in whole, a failure is ours, whatever became of the connection.
          if (!whole) logger.info({ err }, 'an inbound email was cut off');
          else logger.error({ err }, 'could not take an inbound email');
          answer(reply(451, messages.tryLater));
        },
      );
    },
  });

  /** A deadline from now for the connection's next message: past it, the connection is closed. */
  function startDeadline(sessionId: string) {
    clearTimeout(deadlines.get(sessionId));
    const timer = setTimeout(() => {
      for (const connection of server.connections) if (connection.id === sessionId) connection.send(421, messages.tooSlow);
    }, limits.messageDeadlineMs);
    timer.unref();
    deadlines.set(sessionId, timer);
  }

  /** Reads the message and hands it to each recipient's channel. */
  async function receive(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string | Error> {
    const envelopeFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
    let read: Awaited<ReturnType<typeof readMail>>;
    try {
      read = await readMail(stream, store, limits);
    } catch (err) {
      if (err instanceof MailRefused) await recordRefusals(session, envelopeFrom || 'unknown', err);
      throw err;
    }
    try {
      // Once, however many channels take the message: keeping moves the temp files.
      let kept: Promise<unknown> | undefined;
      const keepFiles = async () => {
        kept ??= Promise.all([...read.bodyFiles, ...read.attachments].map((file) => store.keep(file.temp, file.sha256)));
        await kept;
      };
      const mail: InboundMail = {
        from: read.from || envelopeFrom || 'unknown sender',
        envelopeFrom: envelopeFrom || 'unknown',
        subject: read.subject,
        text: read.text,
        messageId: read.messageId,
        bodyFiles: read.bodyFiles,
        attachments: read.attachments,
        keepFiles,
      };

      const refusals: string[] = [];
      for (const recipient of session.envelope.rcptTo) {
        const channel = await channels.emailChannel(recipient.address);
        // Disabled or deleted since its RCPT TO: refused, as it would be now.
        if (!channel) {
          refusals.push(messages.noMailbox(recipient.address));
          continue;
        }
        const result = await channels.receiveEmail(channel, mail);
        logger.info({ channelId: channel.id, code: result.code, made: result.made }, 'inbound email');
        if (result.code !== 250) refusals.push(result.message);
      }
      // One reply for all recipients (SMTP): refused only when every channel refused it.
      return refusals.length === session.envelope.rcptTo.length && refusals.length > 0 ? reply(550, refusals[0]!) : 'Accepted';
    } finally {
      // What was kept has moved; the rest goes.
      await Promise.all(read.temps.map((temp) => store.discard(temp)));
    }
  }

  /**
   * A message refused before any channel read it (too large, too complex) is in each
   * recipient's channel's delivery log, as a webhook body refused 413 or 415 is. A failure to
   * write that does not change the answer.
   */
  async function recordRefusals(session: SMTPServerSession, sender: string, err: MailRefused): Promise<void> {
    for (const recipient of session.envelope.rcptTo) {
      try {
        const channel = await channels.emailChannel(recipient.address);
        if (channel) await channels.recordRefusal(channel, sender, err.responseCode, err.message);
      } catch (failure) {
        logger.error({ err: failure }, 'could not record a refused inbound email');
      }
    }
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
    close: () =>
      new Promise<void>((resolve) =>
        server.close(() => {
          for (const timer of deadlines.values()) clearTimeout(timer);
          resolve();
        }),
      ),
  };
}
