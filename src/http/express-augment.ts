import type { ApiCaller } from '../organizations/api-keys.js';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by the request-id middleware; echoed in `X-Request-Id`. */
      id: string;
      /** The organization and key behind an authenticated API call. */
      caller?: ApiCaller;
    }
  }
}
