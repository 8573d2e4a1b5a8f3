import type { RequestHandler } from 'express';
import helmet, { type HelmetOptions } from 'helmet';

/** The console serves its own scripts and styles; nothing inline, nothing from elsewhere. */
const directives = {
  'default-src': ["'self'"],
  'script-src': ["'self'"],
  'style-src': ["'self'"],
  'img-src': ["'self'", 'data:'],
  'connect-src': ["'self'"],
  'form-action': ["'self'"],
  'frame-ancestors': ["'none'"],
  'object-src': ["'none'"],
  'base-uri': ["'none'"],
};

const withDirectives = (extra: Record<string, string[] | null>): HelmetOptions => ({
  contentSecurityPolicy: { directives: { ...directives, ...extra } },
});

/**
 * Helmet's headers, with `upgrade-insecure-requests` only on HTTPS requests (directly or
 * behind a trusted proxy): on a plain-HTTP install it would send the browser to an HTTPS
 * port that does not exist, breaking forms and assets.
 */
export function securityHeaders(): RequestHandler {
  const secure = helmet(withDirectives({ 'upgrade-insecure-requests': [] }));
  const plain = helmet(withDirectives({ 'upgrade-insecure-requests': null }));
  return (req, res, next) => (req.secure ? secure : plain)(req, res, next);
}
