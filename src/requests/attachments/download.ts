import fs from 'node:fs';
import { createHash } from 'node:crypto';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { request } from 'undici';
import type { AddressPolicy } from '../../net/address-policy.js';
import { checkLiteralAddress, createGuardedAgent, errorCodes, networkFailure } from '../../net/guarded-agent.js';

/** A download that failed for a reason the caller may read (`HTTP 404`, `timed out after 10s`). */
export class DownloadError extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'DownloadError';
  }
}

export interface DownloadLimits {
  timeoutMs: number;
  maxBytes: number;
  maxRedirects: number;
}

export interface DownloadedFile {
  sizeBytes: number;
  sha256: string;
  /** The URL the file finally came from, after redirects. */
  finalUrl: URL;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

export type Downloader = ReturnType<typeof createDownloader>;

/**
 * Fetches files from user-supplied URLs without letting them reach addresses the policy
 * refuses: host names are checked at connect time (after DNS, so rebinding does not help),
 * IP literals before connecting, and every redirect hop again.
 */
export function createDownloader(policy: AddressPolicy, limits: DownloadLimits) {
  const agent = createGuardedAgent(policy, { headersTimeout: limits.timeoutMs, bodyTimeout: limits.timeoutMs });

  /** Downloads `url` into `destination`, hashing as it streams. Throws DownloadError. */
  async function download(url: string, destination: string, cancel?: AbortSignal): Promise<DownloadedFile> {
    const timeout = AbortSignal.timeout(limits.timeoutMs);
    const signal = cancel ? AbortSignal.any([timeout, cancel]) : timeout;
    try {
      let target = parseHttpUrl(url);
      for (let hop = 0; ; hop++) {
        checkLiteralAddress(target, policy);
        const response = await request(target, {
          dispatcher: agent,
          method: 'GET',
          signal,
          headers: { 'user-agent': 'Scribe attachment fetcher', accept: '*/*' },
        });
        if (REDIRECT_STATUSES.has(response.statusCode)) {
          await response.body.dump();
          if (hop >= limits.maxRedirects) throw new DownloadError('too many redirects');
          const location = response.headers.location;
          if (typeof location !== 'string') throw new DownloadError(`HTTP ${response.statusCode} without Location`);
          target = parseHttpUrl(location, target);
          continue;
        }
        if (response.statusCode < 200 || response.statusCode > 299) {
          await response.body.dump();
          throw new DownloadError(`HTTP ${response.statusCode}`);
        }
        const declared = Number(response.headers['content-length']);
        if (Number.isFinite(declared) && declared > limits.maxBytes) {
          await response.body.dump({ limit: 0 }).catch(() => undefined);
          throw new DownloadError(`file exceeds ${formatBytes(limits.maxBytes)} limit`);
        }
        const { sizeBytes, sha256 } = await saveCapped(response.body, destination, limits.maxBytes);
        return { sizeBytes, sha256, finalUrl: target };
      }
    } catch (err) {
      throw toDownloadError(err, timeout, limits);
    }
  }

  return { download, close: () => agent.close() };
}

function parseHttpUrl(value: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(value, base);
  } catch {
    throw new DownloadError('invalid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new DownloadError('unsupported URL scheme');
  if (url.username || url.password) throw new DownloadError('invalid URL');
  return url;
}

async function saveCapped(body: NodeJS.ReadableStream, destination: string, maxBytes: number) {
  const hash = createHash('sha256');
  let sizeBytes = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      sizeBytes += chunk.length;
      if (sizeBytes > maxBytes) return done(new DownloadError(`file exceeds ${formatBytes(maxBytes)} limit`));
      hash.update(chunk);
      done(null, chunk);
    },
  });
  await pipeline(body, meter, fs.createWriteStream(destination, { flags: 'wx' }));
  return { sizeBytes, sha256: hash.digest('hex') };
}

/** Short, human reasons for the `Attachment download failed: <reason>` message. */
function toDownloadError(err: unknown, timeout: AbortSignal, limits: DownloadLimits): DownloadError {
  if (err instanceof DownloadError) return err;
  if (timeout.aborted) return new DownloadError(`timed out after ${formatSeconds(limits.timeoutMs)}`);
  const codes = errorCodes(err);
  if (codes.includes('UND_ERR_HEADERS_TIMEOUT') || codes.includes('UND_ERR_BODY_TIMEOUT')) {
    return new DownloadError(`timed out after ${formatSeconds(limits.timeoutMs)}`);
  }
  const failure = networkFailure(err);
  if (failure) return new DownloadError(failure);
  if (codes.includes('ABORT_ERR') || (err as Error)?.name === 'AbortError') return new DownloadError('cancelled');
  return new DownloadError('network error');
}

export function formatBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && value % 1024 === 0 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value} ${units[unit]}`;
}

function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))}s`;
}
