import net from 'node:net';
import { ValidationError } from '../http/errors.js';
import type { AddressPolicy } from './address-policy.js';

/**
 * A URL staff give the service to call (a webhook endpoint, an MCP server): http or https,
 * no credentials in it, at most 2000 characters, and not an IP address the policy refuses.
 * Host names are checked when connecting (net/guarded-agent.ts), since DNS may change.
 */
export function checkUserUrl(value: string, policy: AddressPolicy, messages: { invalid: string; privateAddress: string }): string {
  const text = value.trim();
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ValidationError(messages.invalid);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || text.length > 2000) throw new ValidationError(messages.invalid);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host) && !policy(host)) throw new ValidationError(messages.privateAddress);
  return url.toString();
}
