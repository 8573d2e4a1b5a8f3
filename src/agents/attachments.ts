import fs from 'node:fs/promises';
import { extractText } from 'unpdf';

/** A task's stored file, as an agent is given it. */
export interface AgentAttachment {
  filename: string;
  contentType: string;
  sizeBytes: number;
  read(): Promise<Buffer>;
}

/** How much of a text, CSV, JSON or PDF attachment the model is given inline. */
export const INLINE_TEXT_CHARS = 20_000;
/** The largest image sent as an image part; a larger one is only named. */
export const IMAGE_MAX_BYTES = 5 * 1024 * 1024;

export type AttachmentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

const TEXT_TYPES = new Set(['application/json', 'application/xml', 'application/x-ndjson', 'application/yaml', 'application/x-yaml', 'application/csv']);
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** The stored files of a task, read on demand from the attachment store's path for each. */
export function storedAttachments(
  rows: ReadonlyArray<{ filename: string; content_type: string; size_bytes: number; sha256: string }>,
  pathFor: (sha256: string) => string,
): AgentAttachment[] {
  return rows.map((row) => ({ filename: row.filename, contentType: row.content_type, sizeBytes: row.size_bytes, read: () => fs.readFile(pathFor(row.sha256)) }));
}

/** `report.pdf (application/pdf, 12 KiB)`: how agents name a file. */
export function describeAttachment(attachment: Pick<AgentAttachment, 'filename' | 'contentType' | 'sizeBytes'>): string {
  return `${attachment.filename} (${attachment.contentType}, ${formatSize(attachment.sizeBytes)})`;
}

/**
 * The files as parts of the model's first message. Text, Markdown, CSV and JSON are given
 * inline and PDFs as their extracted text (unpdf), each cut to INLINE_TEXT_CHARS with a
 * note; images as image parts when the model can see them; anything else by its name,
 * type and size, so the model knows it exists.
 */
export async function attachmentParts(attachments: readonly AgentAttachment[], { vision }: { vision: boolean }): Promise<AttachmentPart[]> {
  const parts: AttachmentPart[] = [];
  for (const [i, attachment] of attachments.entries()) {
    const heading = `Attachment ${i + 1}: ${describeAttachment(attachment)}`;
    const type = attachment.contentType.split(';')[0]!.trim().toLowerCase();
    if (type.startsWith('text/') || TEXT_TYPES.has(type)) {
      parts.push({ type: 'text', text: inline(heading, (await attachment.read()).toString('utf8')) });
    } else if (type === 'application/pdf') {
      parts.push({ type: 'text', text: await pdfText(heading, attachment) });
    } else if (IMAGE_TYPES.has(type)) {
      if (!vision) parts.push({ type: 'text', text: `${heading}: an image, not shown (this model is not marked as able to see images).` });
      else if (attachment.sizeBytes > IMAGE_MAX_BYTES) parts.push({ type: 'text', text: `${heading}: an image over ${formatSize(IMAGE_MAX_BYTES)}, not shown.` });
      else {
        parts.push({ type: 'text', text: `${heading}: the image follows.` });
        parts.push({ type: 'image_url', image_url: { url: `data:${type};base64,${(await attachment.read()).toString('base64')}` } });
      }
    } else {
      parts.push({ type: 'text', text: `${heading}: not given to you (it cannot be read as text).` });
    }
  }
  return parts;
}

function inline(heading: string, text: string): string {
  const cut = text.length > INLINE_TEXT_CHARS;
  const shown = cut ? text.slice(0, INLINE_TEXT_CHARS) : text;
  return `${heading}${cut ? ` (cut: the first ${INLINE_TEXT_CHARS.toLocaleString('en')} of ${text.length.toLocaleString('en')} characters)` : ''}\n-----\n${shown}\n-----`;
}

async function pdfText(heading: string, attachment: AgentAttachment): Promise<string> {
  try {
    const { text } = await extractText(new Uint8Array(await attachment.read()), { mergePages: true });
    return inline(`${heading}, its text`, text);
  } catch {
    return `${heading}: its text could not be read.`;
  }
}

/** Bytes as people read them: 512 bytes, 1.5 KiB, 3.2 MiB. */
function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  const units = ['KiB', 'MiB', 'GiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${Number(value.toFixed(1))} ${units[unit]}`;
}
