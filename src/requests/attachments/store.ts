import fs from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import { finished } from 'node:stream/promises';
import path from 'node:path';
import { createHash, randomUUID } from 'node:crypto';
import { drained } from '../../lib/streams.js';
import { DATA_FOLDER_MODE } from '../../lib/paths.js';

export type AttachmentStore = ReturnType<typeof createAttachmentStore>;

/** A file in the store's temp folder, as written so far. */
export interface TempWriter {
  temp: string;
  write(chunk: Buffer): Promise<void>;
  /** Ends the file; answers its size and hash, for `keep()`. */
  close(): Promise<TempFile>;
  /** Stops writing and deletes the file (a message refused halfway). */
  discard(): Promise<void>;
}

export interface TempFile {
  temp: string;
  sha256: string;
  sizeBytes: number;
}

/**
 * Files under `<dir>/<first two hex digits>/<sha256>`: one copy per content, however many
 * receipts refer to it. Downloads land in `<dir>/tmp` first and move in only once a whole
 * request has succeeded.
 */
export function createAttachmentStore(dir: string) {
  const tmpDir = path.join(dir, 'tmp');

  return {
    async tempFile(): Promise<string> {
      await fs.mkdir(tmpDir, { recursive: true, mode: DATA_FOLDER_MODE });
      return path.join(tmpDir, randomUUID());
    },

    pathFor(sha256: string): string {
      return path.join(dir, sha256.slice(0, 2), sha256);
    },

    /** Moves a downloaded file to its content address; replacing a copy already there is harmless, the bytes are the same. */
    async keep(tempFile: string, sha256: string): Promise<void> {
      const target = this.pathFor(sha256);
      await fs.mkdir(path.dirname(target), { recursive: true, mode: DATA_FOLDER_MODE });
      await fs.rename(tempFile, target);
    },

    /**
     * A new temp file written piece by piece (an email's part as it streams in), hashed as it
     * goes: `close()` answers what `keep()` needs. Each write waits while the disk catches up,
     * so a fast sender does not pile the file up in memory.
     */
    async openTemp(): Promise<TempWriter> {
      const temp = await this.tempFile();
      const out = createWriteStream(temp, { flags: 'wx' });
      // Kept until the next write or close() reports it: an 'error' nobody listens to ends the process.
      let failure: Error | undefined;
      out.on('error', (err) => (failure = err));
      const hash = createHash('sha256');
      let sizeBytes = 0;
      return {
        temp,
        async write(chunk: Buffer) {
          if (failure) throw failure;
          hash.update(chunk);
          sizeBytes += chunk.length;
          if (!out.write(chunk)) await drained(out);
          if (failure) throw failure;
        },
        async close() {
          out.end();
          await finished(out);
          return { temp, sha256: hash.digest('hex'), sizeBytes };
        },
        async discard() {
          out.destroy();
          await fs.rm(temp, { force: true });
        },
      };
    },

    async discard(tempFile: string): Promise<void> {
      await fs.rm(tempFile, { force: true });
    },
  };
}
