import type { ServiceOptions, Services } from '../src/services.js';
import { operatorActor, type Actor } from '../src/audit/service.js';
import { actorOf } from '../src/http/api-key-auth.js';
import { createBuiltinAgent } from '../src/agents/builtin.js';
import { generator } from './generator.js';
import { demoAgent } from './demo-scripts.js';
import { HISTORY_MS, replayHistory, travelClock, type TravelClock } from './demo-history.js';

/**
 * Demo data: one organization with a known API key and console user, a scribe in each
 * state, two schedules, a webhook channel, Companies and Contacts entries, and three days of
 * history (demo-history.ts) so the console has something to show. Running it again changes
 * nothing: each part is made only when missing, and the history only with a new
 * organization. The key and password are public; never seed them into a real install.
 */
export const DEMO = {
  organizationName: 'Demo Org',
  apiKey: 'sk_demo_4f1c2e8b9a7d6c5e3f2a1b0c9d8e7f6a',
  userEmail: 'admin@demo.scribe.local',
  userPassword: 'demo-password',
  scribes: [
    // The builtin agent answers offline; switch one to `openai` with `admin scribe set-agent`.
    { slug: 'atlas', name: 'Atlas', state: 'active', agent: 'builtin', instructions: 'You handle customer research: companies, contacts and follow-ups.' },
    { slug: 'hermes', name: 'Hermes', state: 'powered_off', agent: 'builtin', instructions: 'You carry messages between teams.' },
    { slug: 'nova', name: 'Nova', state: 'unprovisioned', agent: 'builtin', instructions: '' },
  ],
  /** A webhook channel without verification, so a plain curl reaches atlas (its URL is printed at start). */
  channel: { scribe: 'atlas', kind: 'webhook', name: 'Demo webhook', verify: 'none' },
  schedules: [
    {
      scribe: 'atlas',
      cron: '0 9 * * 1',
      timezone: 'Europe/Berlin',
      title: 'Weekly summary',
      summary: "Summarize last week's receipts: what was asked, what was done, what is still open.",
    },
    {
      scribe: 'atlas',
      cron: '0 8 * * *',
      timezone: 'Europe/Berlin',
      title: 'Morning digest',
      summary: 'List what was done overnight, what waits for input and what failed.',
    },
  ],
} as const;

const MINUTE = 60_000;

/** Fixed ids, so the README's examples work as written against any demo database. */
export const DEMO_ENTRY_TYPES = {
  companies: '01935f00-0000-7000-8000-00000000c001',
  contacts: '01935f00-0000-7000-8000-00000000c002',
};

const NAMED_COMPANIES = [
  { Name: 'Acme Corp', Industry: 'Manufacturing', City: 'Zurich', Employees: 1200, Public: true, Founded: '1987-03-14' },
  { Name: 'Globex', Industry: 'Energy', City: 'Geneva', Employees: 340, Public: false, Founded: '2004-09-01' },
  { Name: 'Initech', Industry: 'Software', City: 'Basel', Employees: 85, Public: false, Founded: '2012-06-30' },
];

const WORDS = {
  first: ['Blue', 'Bright', 'North', 'Silver', 'Green', 'Iron', 'Swift', 'Clear', 'Golden', 'Red'],
  second: ['River', 'Peak', 'Field', 'Stone', 'Harbor', 'Forge', 'Bridge', 'Valley', 'Cloud', 'Oak'],
  suffix: ['AG', 'GmbH', 'Labs', 'Systems', 'Partners', 'Group'],
  industry: ['Software', 'Manufacturing', 'Energy', 'Retail', 'Logistics', 'Finance', 'Health'],
  city: ['Zurich', 'Geneva', 'Basel', 'Bern', 'Lausanne', 'Lugano', 'Berlin', 'Vienna'],
  given: ['Ada', 'Grace', 'Alan', 'Linus', 'Barbara', 'Ken', 'Margaret', 'Dennis', 'Frances', 'John'],
  family: ['Lovelace', 'Hopper', 'Turing', 'Torvalds', 'Liskov', 'Thompson', 'Hamilton', 'Ritchie', 'Allen', 'Backus'],
  title: ['CTO', 'Head of Sales', 'Engineer', 'Office Manager', 'CFO', 'Designer', 'Support Lead'],
};

/** Companies and Contacts: a few named ones the README uses, then a few hundred generated. */
async function seedEntries(services: Services, organizationId: string): Promise<void> {
  if (await services.db('entry_types').where({ id: DEMO_ENTRY_TYPES.companies }).first()) return;
  const companies = await services.entryTypes.create(organizationId, {
    id: DEMO_ENTRY_TYPES.companies,
    name: 'Companies',
    fields: [
      { name: 'Name', type: 'text', primary: true },
      { name: 'Industry', type: 'text' },
      { name: 'City', type: 'text' },
      { name: 'Employees', type: 'number' },
      { name: 'Public', type: 'boolean' },
      { name: 'Founded', type: 'date' },
    ],
  });
  const contacts = await services.entryTypes.create(organizationId, {
    id: DEMO_ENTRY_TYPES.contacts,
    name: 'Contacts',
    fields: [
      { name: 'Name', type: 'text', primary: true },
      { name: 'Email', type: 'text' },
      { name: 'Job Title', type: 'text' },
      { name: 'Company', type: 'relationship', target: companies.id },
      { name: 'Score', type: 'number' },
    ],
  });

  const random = generator(42);
  const companyIds: string[] = [];
  for (const fields of NAMED_COMPANIES) companyIds.push((await services.entries.create(organizationId, companies.id, { fields })).id);
  for (let i = 0; i < 200; i++) {
    const fields = {
      Name: `${random.pick(WORDS.first)} ${random.pick(WORDS.second)} ${random.pick(WORDS.suffix)} ${i + 1}`,
      Industry: random.pick(WORDS.industry),
      City: random.pick(WORDS.city),
      Employees: Math.floor(random.next() * 5000) + 1,
      Public: random.next() < 0.3,
      Founded: `${1950 + Math.floor(random.next() * 74)}-${String(1 + Math.floor(random.next() * 12)).padStart(2, '0')}-15`,
    };
    const entry = await services.entries.create(organizationId, companies.id, { fields, draft: i % 25 === 7, archived: i % 40 === 11 });
    companyIds.push(entry.id);
  }

  await services.entries.create(organizationId, contacts.id, {
    fields: { Name: 'Ada Lovelace', Email: 'ada@acme.example', 'Job Title': 'CTO', Company: [companyIds[0]!], Score: 9.5 },
  });
  await services.entries.create(organizationId, contacts.id, {
    fields: { Name: 'Grace Hopper', Email: 'grace@globex.example', 'Job Title': 'Head of Sales', Company: [companyIds[1]!, companyIds[0]!], Score: 8 },
  });
  for (let i = 0; i < 150; i++) {
    const given = random.pick(WORDS.given);
    const family = random.pick(WORDS.family);
    const fields = {
      Name: `${given} ${family} ${i + 1}`,
      Email: `${given}.${family}.${i + 1}@example.com`.toLowerCase(),
      'Job Title': random.pick(WORDS.title),
      Company: [random.pick(companyIds)],
      Score: Math.round(random.next() * 100) / 10,
    };
    await services.entries.create(organizationId, contacts.id, { fields, draft: i % 30 === 4, archived: i % 50 === 9 });
  }
}

export interface DemoCredentials {
  organizationId: string;
  apiKey: string;
  email: string;
  password: string;
  /** The demo webhook channel's path, `/inbound/<token>`. */
  webhookPath: string;
}

/**
 * Seeds the demo through services that `open` makes with the options given (the demo's
 * clock, which the history sets back, and its agent); stops them when done. The history
 * leads up to `realNow` (the real time unless a test chooses the hour).
 */
export async function seed(open: (options: ServiceOptions) => Services, { realNow }: { realNow?: () => number } = {}): Promise<DemoCredentials> {
  const clock = travelClock(realNow);
  const services = open({
    clock,
    agents: { builtin: demoAgent(createBuiltinAgent()) },
    // The history ticks each queue itself, at each moment's time.
    dispatchOnAccept: false,
    runOnNewWork: false,
    deliverOnEvent: false,
    // Retries exactly on the documented schedule, so the oldest deliveries have used it up.
    webhooks: { random: () => 0.5 },
    readThreads: 0,
    // A replay of one run at a time: nothing to gather into shared commits.
    runtime: { commitGapMs: 0 },
  });
  try {
    return await seedWith(services, clock);
  } finally {
    clock.resume();
    await services.stop();
  }
}

async function seedWith(services: Services, clock: TravelClock): Promise<DemoCredentials> {
  const { db } = services;
  const now = clock().getTime();
  const existingKey = await services.organizations.authenticate(DEMO.apiKey);
  // A new organization is made three days ago, and lives its history up to now.
  if (!existingKey) clock.startAt(now - HISTORY_MS - 15 * MINUTE);
  const organizationId = existingKey?.organizationId ?? (await services.organizations.createOrganization({ name: DEMO.organizationName })).id;
  if (!existingKey) await services.organizations.createApiKey({ organizationId, name: 'Demo key', key: DEMO.apiKey });

  const user =
    (await services.users.findByEmail(DEMO.userEmail)) ?? (await services.users.create({ organizationId, email: DEMO.userEmail, password: DEMO.userPassword, role: 'admin' }));

  for (const scribe of DEMO.scribes) {
    const exists = await db('scribes').where({ organization_id: organizationId, slug: scribe.slug }).first();
    if (!exists) await services.scribes.create({ organizationId, ...scribe });
  }

  const schedules = await services.schedules.list(organizationId);
  for (const { scribe, ...schedule } of DEMO.schedules) {
    if (!schedules.some((s) => s.title === schedule.title)) await services.schedules.create(operatorActor(organizationId), scribe, schedule);
  }

  let [channel] = await services.channels.list(organizationId);
  if (!channel) {
    const { scribe, ...input } = DEMO.channel;
    const created = await services.channels.create(operatorActor(organizationId), scribe, input);
    channel = await services.channels.get(organizationId, created.channel.id);
  }

  await seedEntries(services, organizationId);

  if (!existingKey) {
    const admin: Actor = { type: 'user', id: user.id, label: user.email, organizationId };
    const api = actorOf({ caller: (await services.organizations.authenticate(DEMO.apiKey))! });
    await replayHistory(services, clock, { organizationId, admin, api, now, random: generator(7) });
  }

  return { organizationId, apiKey: DEMO.apiKey, email: DEMO.userEmail, password: DEMO.userPassword, webhookPath: `/inbound/${channel.token}` };
}
