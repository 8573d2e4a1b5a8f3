import fs from 'node:fs/promises';
import path from 'node:path';
import { createHash, randomUUID } from 'node:crypto';

export type AttachmentStore = ReturnType<typeof createAttachmentStore>;

/**
 * Files under `<dir>/<first two hex digits>/<sha256>`: one copy per content, however many
 * receipts refer to it. Downloads land in `<dir>/tmp` first and move in only once a whole
 * request has succeeded.
 */
export function createAttachmentStore(dir: string) {
  const tmpDir = path.join(dir, 'tmp');

  return {
    async tempFile(): Promise<string> {
      await fs.mkdir(tmpDir, { recursive: true });
      return path.join(tmpDir, randomUUID());
    },

    pathFor(sha256: string): string {
      return path.join(dir, sha256.slice(0, 2), sha256);
    },

    /** Moves a downloaded file to its content address; replacing a copy already there is harmless, the bytes are the same. */
    async keep(tempFile: string, sha256: string): Promise<void> {
      const target = this.pathFor(sha256);
      await fs.mkdir(path.dirname(target), { recursive: true });
      await fs.rename(tempFile, target);
    },

    /** Stores bytes already in memory (an email's attachment) at their content address. */
    async put(content: Buffer): Promise<{ sha256: string; sizeBytes: number }> {
      const sha256 = createHash('sha256').update(content).digest('hex');
      const temp = await this.tempFile();
      await fs.writeFile(temp, content);
      await this.keep(temp, sha256);
      return { sha256, sizeBytes: content.length };
    },

    async discard(tempFile: string): Promise<void> {
      await fs.rm(tempFile, { force: true });
    },
  };
}
