import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/** Secrets that must never reach a log line, wherever they appear. */
const REDACT = ['req.headers["x-api-key"]', 'req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]', '*.password', '*.key'];

/** JSON lines on stdout (or `destination`, in tests); `pretty` renders them for people (pino-pretty, a dev dependency). */
export function createLogger(level: string, { pretty = false, destination }: { pretty?: boolean; destination?: DestinationStream } = {}): Logger {
  const options = {
    level,
    redact: { paths: REDACT, censor: '[redacted]' },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { colorize: true } } } : {}),
  };
  if (destination) return pino(options, destination);
  if (pretty) return pino(options);
  // Written as each line is logged, not buffered for later: pino flushes a buffer when the
  // process exits, and its stream (sonic-boom 4) retries that flush forever when nothing reads
  // stdout any more (EPIPE: a pipe to head, a log reader that died), so SIGTERM never ended the
  // process. A line written at once that meets EPIPE turns the log off instead.
  return pino(options, pino.destination({ dest: 1, sync: true }));
}
