import { pino, type Logger } from 'pino';

export type { Logger };

/** Secrets that must never reach a log line, wherever they appear. */
const REDACT = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  '*.password',
  '*.key',
];

export function createLogger(level: string, { pretty = false }: { pretty?: boolean } = {}): Logger {
  return pino({
    level,
    redact: { paths: REDACT, censor: '[redacted]' },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { colorize: true } } } : {}),
  });
}
