import { randomBytes } from 'node:crypto';
import { tokenHash } from '../lib/token-hash.js';
import type { Db } from '../db/knex.js';
import type { PageAt } from '../db/keyset.js';
import { dialectOf } from '../db/dialect.js';
import type { Actor, AuditLog } from '../audit/service.js';
import type { Logger } from '../logger.js';
import { type Clock, isoNow } from '../lib/clock.js';
import { UUID_PATTERN, newId } from '../lib/ids.js';
import { HttpError, NotFoundError, ValidationError } from '../http/errors.js';
import { type FetchedAttachment, sanitizeFilename } from '../requests/attachments/fetch.js';
import { cutText } from '../lib/text.js';
import { MAX_ATTACHMENTS, MAX_TITLE_LENGTH, messages as requestMessages, parseSubmitRequestBody } from '../requests/schemas.js';
import type { RequestService } from '../requests/service.js';
import type { SessionService } from '../sessions/service.js';
import type { ScribeService } from '../scribes/service.js';
import type { SecretBox } from '../secrets/secret-box.js';
import * as queries from './queries.js';
import { CHANNEL_KINDS, CHANNEL_MODES, type ChannelKind, type ChannelListRow, type ChannelMode, type ChannelRow, type DeliveryRow } from './queries.js';
import { type InboundBody, readInboundBody, textField } from './inbound-body.js';
import type { MailFile } from './mail-reader.js';
import { VERIFY_PRESETS, type SignedRequest, type VerifyPreset, generateSecret, replayKeyKept, replayKeyOf, secretProblem, slackChallenge, verify } from './verify.js';

/** The attachments a chat message names as not kept; the rest are counted. */
const NAMED_ATTACHMENTS = 10;

export const messages = {
  channelNotFound: 'Channel not found',
  invalidKind: `Kind must be one of ${CHANNEL_KINDS.join(', ')}`,
  invalidMode: `Mode must be one of ${CHANNEL_MODES.join(', ')}`,
  invalidPreset: `Verification preset must be one of ${VERIFY_PRESETS.join(', ')}`,
  invalidAddress: 'Address must be an email address, like atlas@inbound.example.com',
  addressTaken: 'Another channel already receives mail at this address',
  nameTooLong: 'Name must be at most 100 characters',
  noSecretToRotate: 'This channel verifies nothing, so it has no secret',
  invalidSignature: 'Invalid signature',
  notFound: 'Not found',
  emptyEmail: (sender: string) => `(an empty message from ${sender})`,
  attachmentsNotKept: (names: string[]) =>
    `(Attachments not kept in a chat: ${names.slice(0, NAMED_ATTACHMENTS).join(', ')}${names.length > NAMED_ATTACHMENTS ? ` and ${names.length - NAMED_ATTACHMENTS} more` : ''})`,
  textCut: '(The message goes on: a chat keeps its first 64 KiB)',
};

export type { ChannelListRow, ChannelRow, DeliveryRow };

export interface ChannelInput {
  kind: string;
  mode?: string;
  name?: string;
  /** Webhook: the verification preset (default `none`) and its secret (generated when not given). */
  verify?: string;
  secret?: string;
  /** Email: the address it receives. */
  address?: string;
}

/** What an inbound item made, or why it made nothing; `status` is the HTTP status (webhooks). */
export type InboundResult = { status: number; body: Record<string, string> };

/** One email for one channel, as the SMTP listener read it. */
export interface InboundMail {
  /** The sender as the From header names it, else the envelope's. */
  from: string;
  /** The envelope sender's address, kept as the attachments' origin. */
  envelopeFrom: string;
  subject: string;
  /** Plain text, or the HTML reduced to text when the message has no plain part: its first 64 KiB. */
  text: string;
  messageId: string | null;
  /** The body whole when `text` is only its beginning (`message.txt`, and `message.html` for long HTML). */
  bodyFiles: MailFile[];
  attachments: MailFile[];
  /** Moves the files into the attachment store (once, however many channels take the message). */
  keepFiles(): Promise<void>;
}

const ADDRESS_PATTERN = /^[^\s@<>()[\],;:"\\]{1,64}@[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** The sender as the delivery log keeps it (320 characters): a From header may run to 998. */
const senderKept = (sender: string) => cutText(sender, 320);

/** Another delivery with the same replay key got there first: this one's work is rolled back. */
class Replayed extends Error {}

export type ChannelService = ReturnType<typeof createChannelService>;

/**
 * Inbound channels: webhook URLs and email addresses through which senders outside the
 * organization reach one scribe. Each delivery is recorded (`channel_deliveries`); one that
 * creates a receipt or a session is written in the same transaction, holding the sender's
 * delivery id when it has one, so the same delivery sent again creates nothing new.
 */
export function createChannelService({
  db,
  clock,
  logger,
  audit,
  requests,
  sessions,
  scribes,
  secrets,
}: {
  db: Db;
  clock: Clock;
  logger: Logger;
  audit: AuditLog;
  requests: RequestService;
  sessions: SessionService;
  scribes: ScribeService;
  /** Seals the signing secrets where they are stored. */
  secrets: SecretBox;
}) {
  const isUniqueViolation = (err: unknown) => dialectOf(db).isUniqueViolation(err);

  async function get(organizationId: string, id: string): Promise<ChannelListRow> {
    const channel = UUID_PATTERN.test(id) ? await queries.findChannel(db, organizationId, id) : undefined;
    if (!channel) throw new NotFoundError(messages.channelNotFound);
    return opened(channel);
  }

  /** A channel as its readers (an admin's page, the CLI) see it: its token opened, to show the URL. */
  function opened<T extends ChannelRow>(channel: T): T {
    return channel.token === null ? channel : { ...channel, token: secrets.open(channel.token) };
  }

  /** The channel acting on its own in the audit log. */
  const channelActor = (channel: ChannelRow): Actor => ({ type: 'channel', id: channel.id, label: `channel: ${channel.name}`, organizationId: channel.organization_id });

  function check(input: ChannelInput) {
    const kind = input.kind as ChannelKind;
    const mode = (input.mode || 'task') as ChannelMode;
    if (!CHANNEL_KINDS.includes(kind)) throw new ValidationError(messages.invalidKind);
    if (!CHANNEL_MODES.includes(mode)) throw new ValidationError(messages.invalidMode);
    const name = input.name?.trim();
    if (name && name.length > 100) throw new ValidationError(messages.nameTooLong);
    if (kind === 'email') {
      const address = input.address?.trim().toLowerCase() ?? '';
      if (!ADDRESS_PATTERN.test(address)) throw new ValidationError(messages.invalidAddress);
      return { kind, mode, name: name || address, address, verify: null, secret: null, token: null };
    }
    const preset = (input.verify || 'none') as VerifyPreset;
    if (!VERIFY_PRESETS.includes(preset)) throw new ValidationError(messages.invalidPreset);
    const secret = input.secret ? input.secret : generateSecret(preset);
    const problem = input.secret ? secretProblem(preset, input.secret) : null;
    if (problem) throw new ValidationError(problem);
    // 192 bits, URL-safe.
    const token = randomBytes(24).toString('base64url');
    return { kind, mode, name: name || `Webhook (${preset})`, address: null, verify: preset, secret, token };
  }

  /** Records a delivery outside any receipt (refused or replayed); never fails the caller. */
  async function record(channel: ChannelRow, sender: string, fields: Pick<DeliveryRow, 'outcome' | 'status' | 'reason'> & Partial<DeliveryRow>): Promise<void> {
    const row: DeliveryRow = {
      id: newId(),
      channel_id: channel.id,
      received_at: isoNow(clock),
      sender: senderKept(sender),
      request_id: null,
      session_id: null,
      replay_key: null,
      ...fields,
    };
    await queries.insertDelivery(db, row, isUniqueViolation).catch((err) => logger.error({ err, channelId: channel.id }, 'could not record an inbound delivery'));
  }

  /** The answer to a delivery seen before: what the first one made, recorded as replayed. */
  async function replayed(channel: ChannelRow, sender: string, replayKey: string, status: number): Promise<InboundResult | undefined> {
    const first = await queries.findDeliveryByReplayKey(db, channel.id, replayKey);
    if (!first) return undefined;
    await record(channel, sender, { outcome: 'replayed', status, reason: `already delivered as ${replayKey}`, request_id: first.request_id, session_id: first.session_id });
    return { status, body: first.request_id ? { request_id: first.request_id } : { session_id: first.session_id! } };
  }

  /**
   * Creates the channel's task or chat message, with the delivery's row in the same
   * transaction. A refusal by the submit path (400, 422) is recorded and answered as the API
   * would; a replay answers what the first delivery made.
   */
  async function create(
    channel: ChannelRow,
    sender: string,
    replayKey: string | null,
    content: { summary: string; title?: string; files?: FetchedAttachment[] },
    statusOf: { created: number; refused: (err: HttpError) => number },
  ): Promise<InboundResult> {
    const scribe = await scribes.find(channel.scribe_id);
    const delivery = (made: { request_id?: string; session_id?: string }): DeliveryRow => ({
      id: newId(),
      channel_id: channel.id,
      received_at: isoNow(clock),
      sender: senderKept(sender),
      outcome: 'created',
      status: statusOf.created,
      reason: null,
      request_id: made.request_id ?? null,
      session_id: made.session_id ?? null,
      replay_key: replayKey,
    });
    const alongside = async (trx: Db, made: { request_id?: string; session_id?: string }) => {
      if (!(await queries.insertDelivery(trx, delivery(made), isUniqueViolation))) throw new Replayed();
    };
    try {
      if (!scribe) throw new NotFoundError(messages.notFound);
      if (channel.mode === 'chat') {
        const session = await sessions.start(scribe, { message: content.summary, endImmediately: false }, channelActor(channel), (trx, made) =>
          alongside(trx, made as { session_id: string }),
        );
        return { status: statusOf.created, body: { session_id: session.id } };
      }
      const body = parseSubmitRequestBody({ task: { summary: content.summary, title: cutText(content.title ?? '', MAX_TITLE_LENGTH) || null } });
      const receipt = await requests.submit(scribe, body, {
        actor: channelActor(channel),
        origin: { type: 'channel', id: channel.id },
        files: content.files,
        alongside: (trx, receipt) => alongside(trx, { request_id: receipt.id }),
      });
      return { status: statusOf.created, body: { request_id: receipt.id } };
    } catch (err) {
      if (err instanceof Replayed) return (await replayed(channel, sender, replayKey!, statusOf.created))!;
      if (!(err instanceof HttpError)) throw err;
      const status = statusOf.refused(err);
      await record(channel, sender, { outcome: 'refused', status, reason: err.message });
      return { status, body: { error: err.message } };
    }
  }

  return {
    /** A new channel, its token in clear (for its URL); the secret is returned here and shown this once. */
    async create(actor: Actor, scribeSlug: string, input: ChannelInput): Promise<{ channel: ChannelRow; secret: string | null }> {
      const scribe = await scribes.getBySlug(actor.organizationId, scribeSlug);
      const checked = check(input);
      const at = isoNow(clock);
      // The token and the secret sealed: a copy of the database holds neither in clear.
      const seal = (value: string | null) => (value === null ? null : secrets.seal(value));
      const stored: ChannelRow = {
        id: newId(),
        organization_id: actor.organizationId,
        scribe_id: scribe.id,
        ...checked,
        token: seal(checked.token),
        token_hash: checked.token === null ? null : tokenHash(checked.token),
        secret: seal(checked.secret),
        enabled: true,
        created_at: at,
        updated_at: at,
      };
      try {
        await db.transaction(async (trx) => {
          await queries.insertChannel(trx, stored);
          await audit.record(actor, 'channel.create', { type: 'channel', id: stored.id }, stored.address ?? `${stored.mode}, verify ${stored.verify}`, trx);
        });
      } catch (err) {
        if (stored.address && isUniqueViolation(err)) throw new ValidationError(messages.addressTaken);
        throw err;
      }
      return { channel: { ...stored, token: checked.token }, secret: checked.secret };
    },

    /** Turns a channel off (its URL or address then answers as unknown) or on again. */
    async setEnabled(actor: Actor, id: string, enabled: boolean): Promise<ChannelListRow> {
      const channel = await get(actor.organizationId, id);
      await db.transaction(async (trx) => {
        await queries.setEnabled(trx, id, enabled, isoNow(clock));
        await audit.record(actor, enabled ? 'channel.enable' : 'channel.disable', { type: 'channel', id }, channel.name, trx);
      });
      return { ...channel, enabled };
    },

    /** A new secret for a verifying webhook channel, returned (and shown) once; the old one stops working. */
    async rotateSecret(actor: Actor, id: string): Promise<string> {
      const channel = await get(actor.organizationId, id);
      const secret = channel.verify ? generateSecret(channel.verify) : null;
      if (!secret) throw new ValidationError(messages.noSecretToRotate);
      await db.transaction(async (trx) => {
        await queries.setSecret(trx, id, secrets.seal(secret), isoNow(clock));
        await audit.record(actor, 'channel.rotate_secret', { type: 'channel', id }, channel.name, trx);
      });
      return secret;
    },

    get,

    /** The channel's organization, for the admin CLI (which names a channel by id alone). */
    async organizationOf(id: string): Promise<string> {
      const channel = UUID_PATTERN.test(id) ? await queries.findChannelById(db, id) : undefined;
      if (!channel) throw new NotFoundError(messages.channelNotFound);
      return channel.organization_id;
    },

    list: async (organizationId: string, scribeId?: string) => (await queries.listChannels(db, organizationId, scribeId)).map(opened),
    deliveries: (channelId: string, limit = 50) => queries.listDeliveries(db, channelId, limit),
    /** A page of the channel's deliveries, newest first, for the console's pager. */
    deliveryPage: (channelId: string, at: PageAt, limit: number) => queries.pageDeliveries(db, channelId, at, limit),
    deliveryOfRequest: (requestId: string) => queries.findDeliveryOfRequest(db, requestId),
    deliveryOfSession: (sessionId: string) => queries.findDeliveryOfSession(db, sessionId),

    /** Records a delivery the HTTP layer refused before the service saw it (413). */
    recordRefusal: (channel: ChannelRow, sender: string, status: number, reason: string) => record(channel, sender, { outcome: 'refused', status, reason }),

    /** The enabled webhook channel of a token; undefined answers 404 `Not found`. */
    webhookChannel: (token: string) => queries.findEnabledChannel(db, { token }),

    /**
     * One webhook delivery: signature (401), body (400), Slack's URL check, replay, then the
     * task (202 `{request_id}`; 422 when the scribe is not active) or chat message (202 `{session_id}`).
     */
    async receiveWebhook(channel: ChannelRow, request: SignedRequest & { contentType?: string; sender: string }): Promise<InboundResult> {
      const verdict = verify(channel.verify!, channel.secret === null ? null : secrets.open(channel.secret), request, clock());
      if (!verdict.ok) {
        await record(channel, request.sender, { outcome: 'refused', status: 401, reason: verdict.reason });
        return { status: 401, body: { error: messages.invalidSignature } };
      }
      let body: InboundBody;
      try {
        body = readInboundBody(request.body, request.contentType);
      } catch (err) {
        await record(channel, request.sender, { outcome: 'refused', status: 400, reason: (err as Error).message });
        return { status: 400, body: { error: (err as Error).message } };
      }
      const challenge = channel.verify === 'slack' ? slackChallenge(body.json) : null;
      if (challenge !== null) return { status: 200, body: { challenge } };

      const replayKey = replayKeyOf(channel.verify!, request, body.json);
      const seen = replayKey ? await replayed(channel, request.sender, replayKey, 202) : undefined;
      if (seen) return seen;
      const summary = textField(body, channel.mode === 'chat' ? 'message' : 'summary') ?? body.text;
      return create(channel, request.sender, replayKey, { summary, title: textField(body, 'title') }, { created: 202, refused: (err) => err.status });
    },

    /** Whether mail to `address` has a channel (the SMTP listener's RCPT TO). */
    async emailChannel(address: string): Promise<ChannelRow | undefined> {
      return queries.findEnabledChannel(db, { address: address.trim().toLowerCase() });
    },

    /**
     * One email for one channel: a task (subject → title, text → summary, attachments stored as
     * the API's are, after the body whole as `message.txt` when the summary has only its first
     * 64 KiB) or a chat message. Answers with an SMTP reply code: 250, or 550 with the reason.
     */
    async receiveEmail(channel: ChannelRow, mail: InboundMail): Promise<{ code: number; message: string; made?: Record<string, string> }> {
      const replayKey = mail.messageId ? replayKeyKept(mail.messageId) : null;
      const seen = replayKey ? await replayed(channel, mail.from, replayKey, 250) : undefined;
      if (seen) return { code: 250, message: 'Already delivered', made: seen.body };
      const text = mail.text.trim();
      const summary = text || mail.subject.trim() || messages.emptyEmail(mail.from);
      let files: FetchedAttachment[] | undefined;
      let message = summary;
      if (channel.mode === 'task') {
        // A task keeps its attachments, as many as the API takes; a chat keeps none, so has no such limit.
        if (mail.attachments.length > MAX_ATTACHMENTS) {
          await record(channel, mail.from, { outcome: 'refused', status: 550, reason: requestMessages.tooManyAttachments });
          return { code: 550, message: requestMessages.tooManyAttachments };
        }
        await mail.keepFiles();
        files = [...mail.bodyFiles, ...mail.attachments].map((file, position) => ({
          position,
          url: `mailto:${mail.envelopeFrom}`,
          filename: sanitizeFilename(file.filename ?? 'attachment'),
          contentType: file.contentType,
          sizeBytes: file.sizeBytes,
          sha256: file.sha256,
        }));
      } else {
        // A chat message holds text only: what it leaves out is named, so that nobody thinks it read.
        if (mail.bodyFiles.length > 0) message += `\n\n${messages.textCut}`;
        if (mail.attachments.length > 0) message += `\n\n${messages.attachmentsNotKept(mail.attachments.map((a) => a.filename ?? 'attachment'))}`;
      }
      const result = await create(channel, mail.from, replayKey, { summary: message, title: mail.subject.trim() || undefined, files }, { created: 250, refused: () => 550 });
      return result.status === 250 ? { code: 250, message: 'Accepted', made: result.body } : { code: 550, message: result.body.error! };
    },
  };
}
