import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

export const VERIFY_PRESETS = ['none', 'standard-webhooks', 'github', 'slack', 'hmac-sha256'] as const;
export type VerifyPreset = (typeof VERIFY_PRESETS)[number];

/** What a Standard Webhooks secret starts with; the rest is its key in base64. */
const STANDARD_WEBHOOKS_PREFIX = 'whsec_';

/** How far a signed timestamp may be from now, either way (the schemes that carry one). */
export const TIMESTAMP_TOLERANCE_SECONDS = 5 * 60;

/** What the verifier saw: the request's headers (lower-case names) and its raw body. */
export interface SignedRequest {
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** Accepted, or refused with a reason for the channel's delivery log (the sender only ever reads "Invalid signature"). */
export type Verdict = { ok: true } | { ok: false; reason: string };

const header = (request: SignedRequest, name: string): string | undefined => {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** A new secret in the form the preset expects: Standard Webhooks' `whsec_<base64>`, else 32 random bytes in hex. */
export function generateSecret(preset: VerifyPreset): string | null {
  if (preset === 'none') return null;
  return preset === 'standard-webhooks' ? `${STANDARD_WEBHOOKS_PREFIX}${randomBytes(24).toString('base64')}` : randomBytes(32).toString('hex');
}

/** Why a secret given by staff cannot serve the preset, or null when it can. */
export function secretProblem(preset: VerifyPreset, secret: string): string | null {
  if (preset === 'none') return 'The preset none takes no secret';
  if (secret.length < 16 || secret.length > 200) return 'Secret must be 16 to 200 characters';
  if (preset === 'standard-webhooks') {
    try {
      new Webhook(secret);
    } catch {
      return 'A Standard Webhooks secret is whsec_ followed by base64';
    }
  }
  return null;
}

/**
 * Checks the request's signature with the channel's preset, on the raw bytes of the body
 * (never a decoding of them: a body that is not UTF-8 is signed as sent), in constant time.
 */
export function verify(preset: VerifyPreset, secret: string | null, request: SignedRequest, now: Date): Verdict {
  if (preset === 'none') return { ok: true };
  if (!secret) return { ok: false, reason: 'the channel has no secret' };
  switch (preset) {
    case 'standard-webhooks':
      return verifyStandardWebhooks(secret, request, now);
    case 'github':
      return hexSignatureMatches(header(request, 'x-hub-signature-256'), 'sha256=', secret, request.body, 'X-Hub-Signature-256');
    case 'slack': {
      const timestamp = header(request, 'x-slack-request-timestamp');
      const stale = timestampProblem(timestamp, now, 'X-Slack-Request-Timestamp');
      if (stale) return { ok: false, reason: stale };
      const signed = Buffer.concat([Buffer.from(`v0:${timestamp}:`), request.body]);
      return hexSignatureMatches(header(request, 'x-slack-signature'), 'v0=', secret, signed, 'X-Slack-Signature');
    }
    case 'hmac-sha256':
      return hexSignatureMatches(header(request, 'x-signature'), 'sha256=', secret, request.body, 'X-Signature');
  }
}

/**
 * Standard Webhooks: `v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<body>`
 * with the secret's base64 key (after `whsec_`); any of several space-separated signatures
 * may match (a sender rotating its secret). Checked here rather than by the standardwebhooks
 * library, whose verify decodes the body as UTF-8 before signing it (so bytes that are not
 * UTF-8 were checked as U+FFFD) and then parses it as JSON (refusing a signed text or form).
 */
function verifyStandardWebhooks(secret: string, request: SignedRequest, now: Date): Verdict {
  const id = header(request, 'webhook-id');
  const timestamp = header(request, 'webhook-timestamp');
  const signatures = header(request, 'webhook-signature');
  if (!id) return { ok: false, reason: 'missing webhook-id' };
  if (!signatures) return { ok: false, reason: 'missing webhook-signature' };
  const stale = timestampProblem(timestamp, now, 'webhook-timestamp');
  if (stale) return { ok: false, reason: stale };
  const key = Buffer.from(secret.slice(secret.startsWith(STANDARD_WEBHOOKS_PREFIX) ? STANDARD_WEBHOOKS_PREFIX.length : 0), 'base64');
  const expected = Buffer.from(createHmac('sha256', key).update(`${id}.${timestamp}.`).update(request.body).digest('base64'));
  let matched = false;
  for (const entry of signatures.split(' ')) {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== 'v1') continue;
    const given = Buffer.from(entry.slice(comma + 1));
    // Every entry is compared, so the time taken does not say which one matched.
    if (given.length === expected.length && timingSafeEqual(given, expected)) matched = true;
  }
  return matched ? { ok: true } : { ok: false, reason: 'no v1 signature matches' };
}

/** `<prefix><hex HMAC-SHA256 of content>` in the header, compared in constant time. */
function hexSignatureMatches(given: string | undefined, prefix: string, secret: string, content: Buffer, name: string): Verdict {
  if (!given) return { ok: false, reason: `missing ${name}` };
  if (!given.startsWith(prefix)) return { ok: false, reason: `${name} does not start with ${prefix}` };
  const expected = createHmac('sha256', secret).update(content).digest();
  const hex = given.slice(prefix.length);
  const actual = /^[0-9a-f]{64}$/i.test(hex) ? Buffer.from(hex, 'hex') : Buffer.alloc(0);
  if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) return { ok: false, reason: 'signature does not match' };
  return { ok: true };
}

function timestampProblem(timestamp: string | undefined, now: Date, name: string): string | null {
  if (!timestamp) return `missing ${name}`;
  if (!/^\d{1,12}$/.test(timestamp)) return `${name} is not Unix seconds`;
  const skew = Math.abs(now.getTime() / 1000 - Number(timestamp));
  return skew > TIMESTAMP_TOLERANCE_SECONDS ? `${name} is more than 5 minutes from now` : null;
}

/**
 * The sender's id for this delivery, which stays the same when it sends it again: Standard
 * Webhooks' `webhook-id`, GitHub's `X-GitHub-Delivery`, the `event_id` of a Slack event
 * (Slack retries carry the same one), else an `Idempotency-Key` header.
 */
export function replayKeyOf(preset: VerifyPreset, request: SignedRequest, json: unknown): string | null {
  const key =
    preset === 'standard-webhooks'
      ? header(request, 'webhook-id')
      : preset === 'github'
        ? header(request, 'x-github-delivery')
        : preset === 'slack'
          ? slackEventId(json)
          : header(request, 'idempotency-key');
  return key ? replayKeyKept(key) : null;
}

/**
 * A sender's delivery id as it is kept (its column holds 200 characters): a longer one by its
 * SHA-256, so that two long ids that begin alike stay apart. An email's Message-ID may be 998.
 */
export function replayKeyKept(key: string): string {
  return key.length <= 200 ? key : `sha256:${createHash('sha256').update(key).digest('hex')}`;
}

function slackEventId(json: unknown): string | undefined {
  const id = (json as { event_id?: unknown } | null)?.event_id;
  return typeof id === 'string' ? id : undefined;
}

/** Slack's URL verification: a signed `{"type": "url_verification", "challenge"}` answered with the challenge. */
export function slackChallenge(json: unknown): string | null {
  const body = json as { type?: unknown; challenge?: unknown } | null;
  return body?.type === 'url_verification' && typeof body.challenge === 'string' ? body.challenge : null;
}
