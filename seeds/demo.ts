import type { Services } from '../src/services.js';

/**
 * Demo data: one organization with a known API key and console user, a scribe in each
 * state, and a few receipts. Running it again changes nothing: each part is made only
 * when missing. The key and password are public; never seed them into a real install.
 */
export const DEMO = {
  organizationName: 'Demo Org',
  apiKey: 'sk_demo_4f1c2e8b9a7d6c5e3f2a1b0c9d8e7f6a',
  userEmail: 'admin@demo.scribe.local',
  userPassword: 'demo-password',
  scribes: [
    { slug: 'atlas', name: 'Atlas', state: 'active' },
    { slug: 'hermes', name: 'Hermes', state: 'powered_off' },
    { slug: 'nova', name: 'Nova', state: 'unprovisioned' },
  ],
  tasks: [
    { summary: 'Summarize the Q3 support tickets and list the three most common complaints.' },
    {
      summary: 'Draft a welcome email for new enterprise customers.',
      title: 'Enterprise welcome email',
      acceptance_criteria: 'Under 200 words, friendly tone, links to the onboarding guide.',
    },
    { summary: 'Check the pricing page for broken links.\nReport each broken link with the page it is on.' },
  ],
} as const;

export interface DemoCredentials {
  organizationId: string;
  apiKey: string;
  email: string;
  password: string;
}

export async function seed(services: Services): Promise<DemoCredentials> {
  const { db } = services;
  const existingKey = await services.organizations.authenticate(DEMO.apiKey);
  const organizationId = existingKey?.organizationId ?? (await services.organizations.createOrganization({ name: DEMO.organizationName })).id;
  if (!existingKey) await services.organizations.createApiKey({ organizationId, name: 'Demo key', key: DEMO.apiKey });

  if (!(await services.users.findByEmail(DEMO.userEmail))) {
    await services.users.create({ organizationId, email: DEMO.userEmail, password: DEMO.userPassword, role: 'admin' });
  }

  for (const scribe of DEMO.scribes) {
    const exists = await db('scribes').where({ organization_id: organizationId, slug: scribe.slug }).first();
    if (exists) continue;
    const created = await services.scribes.create({ organizationId, ...scribe });
    if (created.state !== 'active') continue;
    for (const task of DEMO.tasks) await services.requests.submit(created, { task });
  }

  return { organizationId, apiKey: DEMO.apiKey, email: DEMO.userEmail, password: DEMO.userPassword };
}
