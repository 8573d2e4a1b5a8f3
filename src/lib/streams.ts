import type { Writable } from 'node:stream';

/**
 * Resolves once `stream` takes writes again, or once it has closed: a writer that waits for
 * 'drain' alone would wait forever on a stream destroyed meanwhile (whoever reads the stream
 * reports why it closed).
 */
export function drained(stream: Writable): Promise<void> {
  return new Promise((resolve) => {
    if (stream.destroyed || !stream.writableNeedDrain) return resolve();
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
  });
}
