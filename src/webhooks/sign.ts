import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** A new endpoint secret: Standard Webhooks' `whsec_` and 24 random bytes in base64. */
export function generateSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/**
 * The Standard Webhooks headers of one attempt: the event id (the same on every retry), the
 * attempt's Unix time, and a `v1,<base64>` signature of `<id>.<timestamp>.<body>` per secret,
 * space-separated. During a rotation's grace period both the new and the old secret sign, so
 * a receiver that still has the old one keeps accepting.
 */
export function signatureHeaders(eventId: string, body: string, secrets: readonly string[], at: Date): Record<string, string> {
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(eventId, at, body)).join(' '),
  };
}
