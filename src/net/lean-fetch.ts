import { Agent, type Dispatcher, interceptors, request } from 'undici';

/** A `fetch` with `close()` to release its sockets. */
export type ClosableFetch = ((url: string | URL | Request, init?: RequestInit) => Promise<Response>) & { close(): Promise<void> };

/** Answers that have no body by definition: a Response made with one throws. */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/**
 * `fetch`'s signature over undici's `request()`, for SDKs that make many small calls (the model
 * endpoints): the fetch API's own machinery (a web stream per body, a Request and spec checks
 * per call) costs more CPU per call than the rest of a run's work together. It takes what such
 * an SDK sends: a method, headers, a string or byte body and a signal. It asks for no
 * compression, and a redirect that reaches it is refused
 * as `fetch` with `redirect: 'error'` refuses it: `dispatcher` may follow them first
 * (`followingRedirects`).
 */
export function leanFetch(dispatcher: Dispatcher): ClosableFetch {
  const send = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    if (input instanceof Request) throw new TypeError('a lean fetch takes a URL, not a Request');
    const body = init.body ?? undefined;
    if (body !== undefined && typeof body !== 'string' && !(body instanceof Uint8Array)) throw new TypeError('a lean fetch sends a string or bytes');
    const answer = await request(input, {
      method: (init.method ?? 'GET') as Dispatcher.HttpMethod,
      headers: new Headers(init.headers),
      body,
      signal: init.signal ?? undefined,
      dispatcher,
    });
    if (answer.statusCode >= 300 && answer.statusCode < 400 && answer.headers.location !== undefined) {
      await answer.body.dump();
      throw new TypeError('fetch failed', { cause: new Error('redirect refused') });
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (Array.isArray(value)) for (const one of value) headers.append(name, one);
      else if (value !== undefined) headers.set(name, value);
    }
    if (NULL_BODY_STATUSES.has(answer.statusCode)) {
      await answer.body.dump();
      return new Response(null, { status: answer.statusCode, headers });
    }
    // Response takes an async iterable of bytes: the body is read as the caller reads it.
    return new Response(answer.body as unknown as ReadableStream, { status: answer.statusCode, headers });
  };
  return Object.assign(send, { close: () => dispatcher.close() });
}

/** A dispatcher that follows redirects as `fetch` does by default (for endpoints the operator set). */
export function followingRedirects(options: Agent.Options = {}): Dispatcher {
  return new Agent(options).compose(interceptors.redirect({ maxRedirections: 20 }));
}
