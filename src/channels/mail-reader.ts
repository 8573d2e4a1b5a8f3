import { PassThrough, Writable, type Readable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { StringDecoder } from 'node:string_decoder';
import mailsplit, { type MimeNode, type SplitterChunk } from '@zone-eu/mailsplit';
import FlowedDecoder from '@zone-eu/mailsplit/lib/flowed-decoder.js';
import libmime from 'libmime';
import { parseAddressHeader, simpleParser } from 'mailparser';
import { drained } from '../lib/streams.js';
import type { AttachmentStore, TempFile, TempWriter } from '../requests/attachments/store.js';
import { isMediaType } from '../requests/attachments/media-type.js';

/** How much of an email's text the summary keeps: 64 KiB of UTF-8, cut back to a whole character. */
export const SUMMARY_BYTES = 64 * 1024;

/** How much of an HTML-only message is reduced to text; a longer one is also kept whole as `message.html`. */
export const HTML_TO_TEXT_BYTES = 1024 * 1024;

export interface MailLimits {
  /** The largest message taken, in bytes. */
  maxBytes: number;
  /** The most MIME parts a message may have, containers included. */
  maxParts: number;
  /** How deep parts may nest (a part of the message itself is at depth 1). */
  maxDepth: number;
}

export const MAIL_LIMITS: Readonly<MailLimits> = Object.freeze({ maxBytes: 25 * 1024 * 1024, maxParts: 1000, maxDepth: 50 });

export const messages = {
  tooLarge: (bytes: number) => `Message exceeds ${bytes} bytes`,
  tooManyParts: (parts: number) => `Message too complex: more than ${parts} MIME parts`,
  tooDeep: (depth: number) => `Message too complex: MIME parts nested more than ${depth} deep`,
  // mailsplit's own limits (a part's header block over 1 MiB).
  tooComplex: (reason: string) => `Message too complex: ${reason}`,
};

/** A message refused for what it is (its size or its structure): sending it again cannot help, so 552. */
export class MailRefused extends Error {
  readonly responseCode = 552;
}

/** A file of the message, written to the store's temp folder and not kept yet. */
export interface MailFile extends TempFile {
  filename: string | null;
  contentType: string;
}

export interface ReadMail {
  /** The From header as text (`"Ada" <ada@example.org>`); empty when there is none. */
  from: string;
  subject: string;
  messageId: string | null;
  /** The text body (the HTML reduced to text when there is no plain part): its first SUMMARY_BYTES. */
  text: string;
  /** The body whole when `text` is only its beginning: `message.txt`, and `message.html` for HTML too long to read. */
  bodyFiles: MailFile[];
  attachments: MailFile[];
  /** Every temp file written; the caller deletes them once it has kept what it needs. */
  temps: string[];
}

/**
 * Reads an email as it streams in, never holding more than a part's chunk, the summary's
 * 64 KiB and (for an HTML-only message) 1 MiB of HTML in memory: the text body streams to
 * `message.txt` once longer than the summary keeps, each attachment to its own temp file.
 * Throws MailRefused for a message over `maxBytes` or with too many or too deeply nested
 * parts; the rest of such a message is still read (and dropped), since SMTP answers only
 * after the whole message. Any other error (the sender went away, a full disk) is thrown
 * as is. Temp files of a message that fails are deleted here.
 */
export async function readMail(source: Readable, store: AttachmentStore, limits: MailLimits = MAIL_LIMITS): Promise<ReadMail> {
  const reader = new MessageReader(store, limits);
  const input = new PassThrough();
  // mailsplit's own cap on parts is lifted: the reader counts them, to say which limit a refusal is about.
  const splitter = new mailsplit.Splitter({ maxChildNodes: Number.MAX_SAFE_INTEGER });
  // Node 20's pipeline reports an error thrown while its last stage iterates as an AbortError: the reader's own is kept.
  let failure: unknown;
  const parsing = pipeline(input, splitter, (items: AsyncIterable<SplitterChunk>) =>
    reader.consume(items).catch((err: unknown) => {
      failure = err;
      throw err;
    }),
  );
  // Awaited below; until then a refusal must not count as unhandled.
  parsing.catch(() => undefined);
  try {
    let bytes = 0;
    for await (const chunk of source as AsyncIterable<Buffer>) {
      // Refused already: the rest is read and dropped.
      if (input.destroyed) continue;
      bytes += chunk.length;
      if (bytes > limits.maxBytes) input.destroy(new MailRefused(messages.tooLarge(limits.maxBytes)));
      else if (!input.write(chunk)) await drained(input);
    }
    if (!input.destroyed) input.end();
    await parsing;
    return await reader.result();
  } catch (thrown) {
    input.destroy();
    await parsing.catch(() => undefined);
    await reader.discard();
    const err = failure ?? thrown;
    throw (err as { code?: string }).code === 'EMAXLEN' ? new MailRefused(messages.tooComplex((err as Error).message)) : err;
  }
}

/** One leaf part being read: its bytes go in as they arrive. */
interface PartWriter {
  write(chunk: Buffer): Promise<void>;
  end(): Promise<void>;
}

const UTF8_NAMES = new Set(['utf8', 'ascii', 'usascii']);
const HTML_MESSAGE_HEAD = Buffer.from('Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n');

class MessageReader {
  private parts = 0;
  private root: MimeNode | undefined;
  private part: PartWriter | undefined;
  private readonly opened: TempWriter[] = [];
  private readonly plain: BodyText;
  private readonly html: BodyText;
  private readonly attachments: MailFile[] = [];

  constructor(
    private readonly store: AttachmentStore,
    private readonly limits: MailLimits,
  ) {
    this.plain = new BodyText(() => this.openTemp(), SUMMARY_BYTES);
    this.html = new BodyText(() => this.openTemp(), HTML_TO_TEXT_BYTES);
  }

  async consume(items: AsyncIterable<SplitterChunk>): Promise<void> {
    for await (const item of items) {
      if (item.type === 'node') {
        await this.endPart();
        this.startPart(item);
      } else if (item.type === 'body' && this.part) {
        await this.part.write(item.value);
      }
      // 'data' is multipart structure: boundaries, preambles.
    }
    await this.endPart();
  }

  private startPart(node: MimeNode) {
    if (++this.parts > this.limits.maxParts) throw new MailRefused(messages.tooManyParts(this.limits.maxParts));
    let depth = 0;
    for (let parent = node.parentNode; parent; parent = parent.parentNode) {
      if (++depth > this.limits.maxDepth) throw new MailRefused(messages.tooDeep(this.limits.maxDepth));
    }
    if (node.root) this.root = node;
    // Containers: their parts follow as nodes of their own.
    if (node.multipart || node.messageNode) return;

    // As mailparser reads a message: inline text parts are the body, everything else an attachment.
    const type = node.contentType || 'text/plain';
    const inline = !node.disposition || node.disposition === 'inline';
    const stages: Transform[] = [node.getDecoder()];
    let sink: Writable;
    if (inline && (type === 'text/plain' || type === 'message/delivery-status')) {
      stages.push(...textDecoders(node));
      sink = this.plain.part();
    } else if (inline && type === 'text/html') {
      stages.push(...textDecoders(node));
      // HTML stands in for text only in a message that has none.
      sink = this.plain.parts > 0 ? dropAll() : this.html.part();
    } else {
      sink = this.attachment(node, type);
    }
    const done = pipeline([...stages, sink]);
    let failure: unknown;
    done.catch((err: unknown) => (failure = err));
    const decoder = stages[0]!;
    this.part = {
      async write(chunk) {
        if (failure) throw failure;
        if (!decoder.write(chunk)) await drained(decoder);
      },
      async end() {
        decoder.end();
        await done;
      },
    };
  }

  private async endPart() {
    const part = this.part;
    this.part = undefined;
    await part?.end();
  }

  private attachment(node: MimeNode, type: string): Writable {
    const filename = node.filename || null;
    // A generic type says little: the file name's extension says more. A type the attachments
    // cannot keep (over 255 characters, or not a media type) is no type at all.
    const given = isMediaType(type) ? type : 'application/octet-stream';
    const contentType = given === 'application/octet-stream' && filename ? libmime.detectMimeType(filename) : given;
    let file: TempWriter;
    return new Writable({
      construct: (done) => {
        this.openTemp().then((opened) => {
          file = opened;
          done();
        }, done);
      },
      write: (chunk: Buffer, _encoding, done) => {
        file.write(chunk).then(() => done(), done);
      },
      final: (done) => {
        file.close().then((closed) => {
          this.attachments.push({ ...closed, filename, contentType });
          done();
        }, done);
      },
    });
  }

  private async openTemp(): Promise<TempWriter> {
    const file = await this.store.openTemp();
    this.opened.push(file);
    return file;
  }

  async result(): Promise<ReadMail> {
    // Both finish, so that the one not used closes its file too.
    const [plain, html] = await Promise.all([this.plain.finish(), this.html.finish()]);
    const body = this.plain.parts > 0 || this.html.parts === 0 ? { text: plain.text, files: plain.file ? [messageText(plain.file)] : [] } : await this.htmlBody(html);
    const header = headerReader(this.root);
    const from = header('from');
    const messageId = header('message-id')?.replace(/^<?(.*?)>?$/, '<$1>');
    return {
      from: from ? parseAddressHeader(from).text : '',
      subject: decodeWords(header('subject') ?? ''),
      messageId: messageId && messageId !== '<>' ? messageId : null,
      text: body.text,
      bodyFiles: body.files,
      attachments: this.attachments,
      temps: this.opened.map((file) => file.temp),
    };
  }

  /** The body of an HTML-only message: the text of its first HTML_TO_TEXT_BYTES, and the HTML whole when longer. */
  private async htmlBody(html: { text: string; file?: TempFile }): Promise<{ text: string; files: MailFile[] }> {
    const text = Buffer.from(await htmlToText(html.text));
    const files: MailFile[] = [];
    if (text.length > SUMMARY_BYTES) {
      const file = await this.openTemp();
      await file.write(text);
      files.push(messageText(await file.close()));
    }
    if (html.file) files.push({ ...html.file, filename: 'message.html', contentType: 'text/html; charset=utf-8' });
    return { text: cutUtf8(text, SUMMARY_BYTES), files };
  }

  /** Stops every file being written and deletes them all (the message failed). */
  async discard(): Promise<void> {
    await Promise.all(this.opened.map((file) => file.discard()));
  }
}

/** The whole text of a message whose summary keeps only its beginning. */
const messageText = (file: TempFile): MailFile => ({ ...file, filename: 'message.txt', contentType: 'text/plain; charset=utf-8' });

/** The stages that turn a text part's decoded bytes into UTF-8: format=flowed, then its charset. */
function textDecoders(node: MimeNode): Transform[] {
  const stages: Transform[] = [];
  // Its typings narrow the events of the Transform it is.
  if (node.flowed) stages.push(new FlowedDecoder({ delSp: node.delSp }) as unknown as Transform);
  const charset = node.charset || 'utf-8';
  // libmime decodes any other charset, an unknown or refused one (UTF-7) as UTF-8.
  if (!UTF8_NAMES.has(charset.toLowerCase().replace(/[^a-z0-9]/g, ''))) stages.push(libmime.createDecodeStream(charset));
  return stages;
}

/** A sink for a part nobody needs. */
function dropAll(): Writable {
  return new Writable({ write: (_chunk, _encoding, done) => done() });
}

/** The first value of a header of the message (decoded as mailparser decodes it), if it has one. */
function headerReader(root: MimeNode | undefined) {
  const lines = root?.headers ? root.headers.getList() : [];
  return (key: string): string | undefined => {
    const line = lines.find((candidate) => candidate.key === key);
    if (!line) return undefined;
    // Raw 8-bit header bytes arrive as binary text: read them as UTF-8.
    return Buffer.from(String(libmime.decodeHeader(line.line).value ?? ''), 'binary')
      .toString()
      .trim();
  };
}

/** Encoded words (`=?utf-8?q?...?=`) decoded; a value in a charset libmime cannot read is kept as it is, as mailparser keeps it. */
function decodeWords(value: string): string {
  try {
    return libmime.decodeWords(value);
  } catch {
    return value;
  }
}

/**
 * A body's text as it streams in, parts joined by a line break and line ends as `\n` (as
 * mailparser reads them): its first `keepBytes` in memory, and the whole text in a temp
 * file once it is longer than that.
 */
class BodyText {
  parts = 0;
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private file: TempWriter | undefined;

  constructor(
    private readonly openTemp: () => Promise<TempWriter>,
    private readonly keepBytes: number,
  ) {}

  /** A sink for the next part's UTF-8 bytes. */
  part(): Writable {
    const decoder = new StringDecoder('utf8');
    let separator = this.parts++ > 0 ? '\n' : '';
    // A CR at the end of a chunk may start a CRLF that the next chunk ends.
    let cr = false;
    const add = (text: string, last: boolean) => {
      let value = separator + (cr ? '\r' : '') + text;
      separator = '';
      cr = !last && value.endsWith('\r');
      if (cr) value = value.slice(0, -1);
      return this.add(value.replace(/\r\n/g, '\n'));
    };
    return new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        add(decoder.write(chunk), false).then(() => done(), done);
      },
      final: (done) => {
        add(decoder.end(), true).then(() => done(), done);
      },
    });
  }

  private async add(text: string) {
    if (!text) return;
    const bytes = Buffer.from(text);
    if (!this.file) {
      if (this.headBytes + bytes.length <= this.keepBytes) {
        this.head.push(bytes);
        this.headBytes += bytes.length;
        return;
      }
      this.file = await this.openTemp();
      for (const kept of this.head) await this.file.write(kept);
      // A few bytes past the cut (they tell whether it splits a character), copied so as not to hold on to the chunk.
      const past = Buffer.from(bytes.subarray(0, this.keepBytes + 4 - this.headBytes));
      this.head.push(past);
      this.headBytes += past.length;
    }
    await this.file.write(bytes);
  }

  /** The text's beginning (whole characters within `keepBytes`) and, when it is longer, the file of all of it. */
  async finish(): Promise<{ text: string; file?: TempFile }> {
    return { text: cutUtf8(Buffer.concat(this.head), this.keepBytes), file: this.file ? await this.file.close() : undefined };
  }
}

/** The first `maxBytes` of UTF-8 as text, cut back to the start of a character that does not fit whole. */
function cutUtf8(bytes: Buffer, maxBytes: number): string {
  if (bytes.length <= maxBytes) return bytes.toString();
  let end = maxBytes;
  // 10xxxxxx: the byte continues a character begun before it.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString();
}

/** mailparser's reduction of HTML to text (with its guards against deeply nested markup), run on a message of that one part. */
async function htmlToText(html: string): Promise<string> {
  const parsed = await simpleParser(Buffer.concat([HTML_MESSAGE_HEAD, Buffer.from(html)]), { skipTextToHtml: true, skipImageLinks: true });
  return parsed.text ?? '';
}
