import type { Services } from '../services.js';
import { operatorActor } from '../audit/service.js';

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
    usage: 'scribe create --org ORG_ID --slug SLUG --name NAME [--state active|powered_off|unprovisioned] [--agent builtin|openai] [--instructions TEXT]',
    async run(flags, s) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      const scribe = await s.scribes.create({
        organizationId: org.id,
        slug: required(flags, 'slug'),
        name: required(flags, 'name'),
        state: optional(flags, 'state'),
        agent: optional(flags, 'agent'),
        instructions: optional(flags, 'instructions'),
      });
      return { id: scribe.id, slug: scribe.slug, state: scribe.state };
    },
  },
  'scribe set-agent': {
    usage: 'scribe set-agent --org ORG_ID --slug SLUG [--agent builtin|openai] [--instructions TEXT]',
    async run(flags, s) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      const scribe = await s.scribes.setAgent(org.id, required(flags, 'slug'), { agent: optional(flags, 'agent'), instructions: optional(flags, 'instructions') });
      return { id: scribe.id, slug: scribe.slug, agent: scribe.agent, instructions: scribe.instructions };
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
  'session show': {
    usage: 'session show --id SESSION_ID',
    async run(flags, s) {
      const session = await s.sessions.find(required(flags, 'id'));
      const messages = session.messages.map((m) => ({ author: m.author, text: m.text, created_at: m.created_at }));
      return { id: session.id, state: session.state, error_message: session.error_message, messages };
    },
  },
  'task show': {
    usage: 'task show --id TASK_ID',
    async run(flags, s) {
      const task = await s.tasks.find(required(flags, 'id'));
      const events = task.events.map((e) => ({ from: e.from_status, to: e.to_status, author: e.author, text: e.text, at: e.created_at }));
      return { id: task.id, status: task.status, title: task.title, result: task.result, last_error: task.last_error, events };
    },
  },
  'task input': {
    usage: 'task input --id TASK_ID --text TEXT',
    async run(flags, s) {
      const task = await s.tasks.find(required(flags, 'id'));
      await s.tasks.giveInput(operatorActor(task.organization_id), task.id, required(flags, 'text'));
      return { id: task.id, status: 'open' };
    },
  },
  backup: {
    usage: 'backup --to FILE',
    run: (flags, s) => s.maintenance.backup(required(flags, 'to')),
  },
  'copy-database': {
    usage: 'copy-database --to POSTGRES_URL',
    async run(flags, s) {
      return { copied: await s.maintenance.copyTo(required(flags, 'to')) };
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
  agent: { type: 'string' },
  instructions: { type: 'string' },
  text: { type: 'string' },
  to: { type: 'string' },
} as const;

export function usage(): string {
  return ['usage: npm run --silent admin -- <command> [--flags]', '', ...Object.values(commands).map((c) => `  ${c.usage}`)].join('\n');
}
