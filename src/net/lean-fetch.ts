import { Agent, type Dispatcher, interceptors, request } from 'undici';

/**
 * What SDKs given a lean fetch read of its answer: a `Response` has all of it. A lean fetch's
 * answer has only this, with its body an async iterable of bytes, not a web stream (the SDKs
 * take either).
 */
export interface FetchAnswer {
  readonly ok: boolean;
  readonly status: number;
  readonly statusText: string;
  readonly url: string;
  readonly headers: Headers;
  readonly body: AsyncIterable<Uint8Array> | null;
  readonly bodyUsed: boolean;
  text(): Promise<string>;
  json(): Promise<unknown>;
}

/** What the model endpoints are called with: `fetch` itself, or a lean one. */
export type ModelFetch = (url: string | URL | Request, init?: RequestInit) => Promise<FetchAnswer>;

/** A `fetch` with `close()` to release its sockets; a lean one answers with a `FetchAnswer`. */
export type ClosableFetch<Answer extends FetchAnswer = Response> = ((url: string | URL | Request, init?: RequestInit) => Promise<Answer>) & { close(): Promise<void> };

/** Answers that have no body by definition: a Response made with one throws. */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/**
 * `fetch`'s signature over undici's `request()`, for SDKs that make many small calls (the model
 * endpoints): the fetch API's own machinery (a Request, spec checks and a web stream per body,
 * and a Response around it) costs more CPU per call than the rest of a run's work together.
 * It answers with a `FetchAnswer` over undici's body as it comes. It takes what such
 * an SDK sends: a method, headers, a string or byte body and a signal. It asks for no
 * compression. A redirect is refused as `fetch` with `redirect: 'error'` refuses it, unless
 * `redirects` is given: a call answered with one is then sent again through it, a dispatcher
 * that follows them (`followingRedirects`). Calls that are not redirected, nearly all, so
 * skip the redirect interceptor, which handles every answer that passes through it.
 */
export function leanFetch(dispatcher: Dispatcher, redirects?: Dispatcher): ClosableFetch<FetchAnswer> {
  const send = async (via: Dispatcher, input: string | URL | Request, init: RequestInit): Promise<FetchAnswer> => {
    if (input instanceof Request) throw new TypeError('a lean fetch takes a URL, not a Request');
    const body = init.body ?? undefined;
    if (body !== undefined && typeof body !== 'string' && !(body instanceof Uint8Array)) throw new TypeError('a lean fetch sends a string or bytes');
    const answer = await request(input, {
      method: (init.method ?? 'GET') as Dispatcher.HttpMethod,
      // What the SDKs send is a Headers already: undici reads its pairs as they are.
      headers: init.headers instanceof Headers ? init.headers : new Headers(init.headers),
      body,
      signal: init.signal ?? undefined,
      dispatcher: via,
    });
    if (answer.statusCode >= 300 && answer.statusCode < 400 && answer.headers.location !== undefined) {
      await answer.body.dump();
      if (redirects && via !== redirects) return send(redirects, input, init);
      throw new TypeError('fetch failed', { cause: new Error('redirect refused') });
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (Array.isArray(value)) for (const one of value) headers.append(name, one);
      else if (value !== undefined) headers.set(name, value);
    }
    if (NULL_BODY_STATUSES.has(answer.statusCode)) {
      await answer.body.dump();
      return new LeanAnswer(String(input), answer.statusCode, headers, null);
    }
    return new LeanAnswer(String(input), answer.statusCode, headers, answer.body);
  };
  return Object.assign((input: string | URL | Request, init: RequestInit = {}) => send(dispatcher, input, init), {
    close: async () => {
      await Promise.all([dispatcher.close(), redirects?.close()]);
    },
  });
}

/** A lean fetch's answer: its body undici's, read as the caller reads it (no web stream), or whole as text or JSON. */
class LeanAnswer implements FetchAnswer {
  readonly ok: boolean;
  // HTTP/1.1's reason phrase is not kept (undici's request() drops it), as fetch over HTTP/2 has none.
  readonly statusText = '';
  constructor(
    readonly url: string,
    readonly status: number,
    readonly headers: Headers,
    readonly body: Dispatcher.ResponseData['body'] | null,
  ) {
    this.ok = status >= 200 && status < 300;
  }
  get bodyUsed(): boolean {
    return this.body?.bodyUsed ?? false;
  }
  text(): Promise<string> {
    return this.body ? this.body.text() : Promise.resolve('');
  }
  json(): Promise<unknown> {
    return this.body ? this.body.json() : Promise.reject(new SyntaxError('Unexpected end of JSON input'));
  }
}

/** A dispatcher that follows redirects as `fetch` does by default: `leanFetch`'s `redirects`, for endpoints the operator set. */
export function followingRedirects(options: Agent.Options = {}): Dispatcher {
  return new Agent(options).compose(interceptors.redirect({ maxRedirections: 20 }));
}
