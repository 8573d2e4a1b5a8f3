import { ValidationError } from '../../http/errors.js';
import type { AttachmentInput } from '../schemas.js';
import { DownloadError, type Downloader } from './download.js';
import type { AttachmentStore } from './store.js';
import { cutText } from '../../lib/text.js';

export const messages = {
  downloadFailed: (reason: string) => `Attachment download failed: ${reason}`,
};

export interface FetchedAttachment {
  position: number;
  url: string;
  filename: string;
  contentType: string;
  sizeBytes: number;
  sha256: string;
}

export type AttachmentFetcher = ReturnType<typeof createAttachmentFetcher>;

/**
 * Downloads all attachments of one request at once. Either every file is kept in the
 * store, or none is: the first failure cancels the rest and throws
 * 422 `Attachment download failed: <reason>`.
 */
export function createAttachmentFetcher({ downloader, store }: { downloader: Downloader; store: AttachmentStore }) {
  return async function fetchAll(inputs: readonly AttachmentInput[]): Promise<FetchedAttachment[]> {
    if (inputs.length === 0) return [];
    const cancel = new AbortController();
    const temps: string[] = [];
    let firstFailure: DownloadError | undefined;

    const results = await Promise.allSettled(
      inputs.map(async (input, position) => {
        const temp = await store.tempFile();
        temps.push(temp);
        try {
          const file = await downloader.download(input.url, temp, cancel.signal);
          return { position, temp, input, file };
        } catch (err) {
          const failure = err instanceof DownloadError ? err : new DownloadError('network error');
          firstFailure ??= failure;
          cancel.abort();
          throw failure;
        }
      }),
    );

    if (firstFailure) {
      await Promise.all(temps.map((temp) => store.discard(temp)));
      throw new ValidationError(messages.downloadFailed(firstFailure.reason));
    }

    const fetched: FetchedAttachment[] = [];
    for (const result of results) {
      if (result.status !== 'fulfilled') continue;
      const { position, temp, input, file } = result.value;
      await store.keep(temp, file.sha256);
      fetched.push({
        position,
        url: input.url,
        filename: sanitizeFilename(input.filename ?? lastPathSegment(file.finalUrl)),
        contentType: input.content_type.trim(),
        sizeBytes: file.sizeBytes,
        sha256: file.sha256,
      });
    }
    return fetched;
  };
}

function lastPathSegment(url: URL): string {
  const segment = url.pathname.split('/').pop() ?? '';
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * A name safe to offer in a download: no paths, control characters or leading dots, and none
 * of the invisible characters that make a name read as something else (a right-to-left
 * override turns "invoice\u202Efdp.exe" into "invoiceexe.pdf" on screen; zero-width and
 * other default-ignorable characters, line and paragraph separators).
 */
export function sanitizeFilename(name: string): string {
  const cleaned = cutText(
    name
      .replace(/[\p{Default_Ignorable_Code_Point}\p{Cf}\p{Zl}\p{Zp}]/gu, '')
      // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it replaces
      .replace(/[\u0000-\u001f\u007f-\u009f/\\:*?"<>|]+/g, '_')
      .replace(/^[.\s]+/, '')
      .trim(),
    255,
  );
  return cleaned.replace(/^_+$/, '') || 'attachment';
}
