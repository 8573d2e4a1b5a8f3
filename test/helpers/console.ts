import supertest from 'supertest';
import type { Harness, Tenant } from './harness.js';

export const PASSWORD = 'correct horse battery';

/** A browser-like client of the console: keeps cookies and the page's CSRF token. */
export interface ConsoleClient {
  agent: ReturnType<typeof supertest.agent>;
  email: string;
  /** The CSRF token of the last page read. */
  token(): Promise<string>;
  get(path: string): Promise<supertest.Response>;
  /** Submits a form as a browser would: urlencoded, with the session's CSRF token unless given. */
  post(path: string, form?: Record<string, string | string[]>): Promise<supertest.Response>;
}

export function csrfTokenOf(html: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(html);
  if (!match) throw new Error('no CSRF field on the page');
  return match[1]!;
}

/** Signs a new user of the tenant's organization in and returns their client. */
export async function signIn(h: Harness, t: Tenant, role: 'admin' | 'viewer' = 'admin'): Promise<ConsoleClient> {
  const email = `${role}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  await h.services.users.create({ organizationId: t.organizationId, email, password: PASSWORD, role });
  const agent = supertest.agent(h.app);
  const login = await agent.get('/login');
  const res = await agent
    .post('/login')
    .type('form')
    .send({ _csrf: csrfTokenOf(login.text), email, password: PASSWORD });
  if (res.status !== 303) throw new Error(`sign-in failed: ${res.status}`);
  const client: ConsoleClient = {
    agent,
    email,
    async token() {
      return csrfTokenOf((await agent.get('/scribes')).text);
    },
    get: (path) => agent.get(path),
    async post(path, form = {}) {
      return agent
        .post(path)
        .type('form')
        .send({ _csrf: await client.token(), ...form });
    },
  };
  return client;
}

/**
 * Signs in to a running server's console through its form, as a browser would: the login
 * page's cookie and CSRF token, then the POST. Resolves with the POST's answer: 303 with the
 * session cookie when signed in.
 */
export async function signInByForm(baseUrl: string, email: string, password: string): Promise<Response> {
  const login = await fetch(`${baseUrl}/login`);
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  return fetch(`${baseUrl}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrfTokenOf(await login.text()), email, password }),
  });
}
