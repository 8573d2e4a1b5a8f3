import type { Services } from '../services.js';

/** What a command needs: its parsed flags and the services. */
type Flags = Record<string, string | boolean | undefined>;
type Command = { usage: string; run: (flags: Flags, services: Services) => Promise<object> };

export class UsageError extends Error {}

function required(flags: Flags, name: string): string {
  const value = flags[name];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required`);
  return value;
}

function optional(flags: Flags, name: string): string | undefined {
  const value = flags[name];
  return typeof value === 'string' ? value : undefined;
}

/** The admin commands of the contract, keyed by their words. Each resolves to the one JSON object it prints. */
export const commands: Record<string, Command> = {
  'org create': {
    usage: 'org create --name NAME',
    async run(flags, s) {
      const org = await s.organizations.createOrganization({ name: required(flags, 'name') });
      return { id: org.id, name: org.name };
    },
  },
  'key create': {
    usage: 'key create --org ORG_ID [--name NAME]',
    run: (flags, s) => s.organizations.createApiKey({ organizationId: required(flags, 'org'), name: optional(flags, 'name') }),
  },
  'key revoke': {
    usage: 'key revoke --id KEY_ID',
    run: (flags, s) => s.organizations.revokeApiKey(required(flags, 'id')),
  },
  'scribe create': {
    usage: 'scribe create --org ORG_ID --slug SLUG --name NAME [--state active|powered_off|unprovisioned]',
    async run(flags, s) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      const scribe = await s.scribes.create({
        organizationId: org.id,
        slug: required(flags, 'slug'),
        name: required(flags, 'name'),
        state: optional(flags, 'state'),
      });
      return { id: scribe.id, slug: scribe.slug, state: scribe.state };
    },
  },
  'scribe set-state': {
    usage: 'scribe set-state --org ORG_ID --slug SLUG --state STATE',
    async run(flags, s) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      const scribe = await s.scribes.setState(org.id, required(flags, 'slug'), required(flags, 'state'));
      return { id: scribe.id, slug: scribe.slug, state: scribe.state };
    },
  },
  'entry-type create': {
    usage: 'entry-type create --org ORG_ID --name NAME --fields JSON',
    async run(flags, s) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      const type = await s.entryTypes.create(org.id, { name: required(flags, 'name'), fields: jsonFlag(flags, 'fields') });
      return { id: type.id, name: type.name };
    },
  },
  'entry create': {
    usage: 'entry create --type TYPE_ID --fields JSON [--draft] [--archived]',
    async run(flags, s) {
      const type = await s.entryTypes.find(required(flags, 'type'));
      const entry = await s.entries.create(type.organization_id, type.id, {
        fields: jsonFlag(flags, 'fields'),
        draft: flags.draft === true,
        archived: flags.archived === true,
      });
      return { id: entry.id };
    },
  },
  'user create': {
    usage: 'user create --org ORG_ID --email EMAIL --password PASSWORD [--role admin|viewer]',
    async run(flags, s) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      return s.users.create({
        organizationId: org.id,
        email: required(flags, 'email'),
        password: required(flags, 'password'),
        role: optional(flags, 'role'),
      });
    },
  },
};

function jsonFlag(flags: Flags, name: string): unknown {
  const text = required(flags, name);
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`--${name} must be JSON`);
  }
}

export const FLAGS = {
  name: { type: 'string' },
  org: { type: 'string' },
  id: { type: 'string' },
  slug: { type: 'string' },
  state: { type: 'string' },
  email: { type: 'string' },
  password: { type: 'string' },
  role: { type: 'string' },
  fields: { type: 'string' },
  type: { type: 'string' },
  draft: { type: 'boolean' },
  archived: { type: 'boolean' },
} as const;

export function usage(): string {
  return ['usage: npm run --silent admin -- <command> [--flags]', '', ...Object.values(commands).map((c) => `  ${c.usage}`)].join('\n');
}
