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
  return destination ? pino(options, destination) : pino(options);
}
