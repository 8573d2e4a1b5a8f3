import type { Services } from '../services.js';
import { operatorActor } from '../audit/service.js';
import type { ScheduleListRow } from '../schedules/queries.js';
import type { ChannelListRow } from '../channels/queries.js';
import type { EndpointRow } from '../webhooks/queries.js';
import type { ScribeRow } from '../scribes/queries.js';
import { EVENT_TYPES } from '../webhooks/events.js';
import { ValidationError } from '../http/errors.js';
import { presentTrace, traceTotals } from '../agents/trace.js';

/** What a command needs: its parsed flags, the services, and the terminal (passwords, warnings). */
type Flags = Record<string, string | boolean | string[] | undefined>;
type Command = {
  /** What `--help` shows; the flags it names are those the command takes. */
  usage: string;
  /** Flags the command reads but its usage leaves out (a way it warns against or refuses in words of its own). */
  alsoTakes?: readonly string[];
  run: (flags: Flags, services: Services, io: CommandIo) => Promise<object>;
};

/** What a command may ask of the person or script running it. */
export interface CommandIo {
  /** A password: standard input's first line when it is not a terminal, else typed at a prompt that does not echo. */
  readPassword(): Promise<string>;
  /** A line on stderr that does not make the command fail. */
  warn(text: string): void;
}

export class UsageError extends Error {}

function required(flags: Flags, name: string): string {
  const value = flags[name];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required`);
  return value;
}

/** A flag that must be given, whose value (blank included) the service checks and refuses in its own words. */
function given(flags: Flags, name: string): string {
  const value = flags[name];
  if (typeof value !== 'string') throw new UsageError(`--${name} is required`);
  return value;
}

function optional(flags: Flags, name: string): string | undefined {
  const value = flags[name];
  return typeof value === 'string' ? value : undefined;
}

/** The admin commands, keyed by their words. Each resolves to the one JSON object it prints. */
export const commands: Record<string, Command> = {
  'org create': {
    usage: 'org create --name NAME',
    async run(flags, s) {
      const org = await s.organizations.createOrganization({ name: required(flags, 'name') });
      return { id: org.id, name: org.name };
    },
  },
  'org list': {
    usage: 'org list',
    async run(_flags, s) {
      return { organizations: (await s.organizations.listOrganizations()).map(({ id, name, created_at }) => ({ id, name, created_at })) };
    },
  },
  'key list': {
    usage: 'key list --org ORG_ID',
    async run(flags, s) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      const keys = await s.organizations.listApiKeys(org.id);
      // The prefix identifies a key; the key itself was shown once, at creation.
      return { keys: keys.map(({ id, name, prefix, created_at, last_used_at, revoked_at }) => ({ id, name, prefix, created_at, last_used_at, revoked_at })) };
    },
  },
  'scribe list': {
    usage: 'scribe list --org ORG_ID',
    async run(flags, s) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      return {
        scribes: (await s.scribes.list(org.id)).map(({ id, slug, name, state, agent, max_concurrency, created_at }) => ({
          id,
          slug,
          name,
          state,
          agent,
          max_concurrency,
          created_at,
        })),
      };
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
    usage:
      'scribe set-agent --org ORG_ID --slug SLUG [--agent builtin|openai] [--instructions TEXT] [--model NAME] [--base-url URL] [--api-key KEY]\n' +
      "  [--vision true|false] [--max-tool-rounds N] [--token-budget N] [--max-concurrency N|none]   (an empty value goes back to the environment's; `none` lifts a budget or cap)",
    async run(flags, s) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      const scribe = await s.scribes.setAgent(org.id, required(flags, 'slug'), {
        agent: optional(flags, 'agent'),
        instructions: optional(flags, 'instructions'),
        model: optional(flags, 'model'),
        baseUrl: optional(flags, 'base-url'),
        apiKey: optional(flags, 'api-key'),
        vision: booleanFlag(flags, 'vision'),
        maxToolRounds: wholeFlag(flags, 'max-tool-rounds'),
        tokenBudget: wholeFlag(flags, 'token-budget'),
        maxConcurrency: wholeFlag(flags, 'max-concurrency'),
      });
      return presentAgent(scribe);
    },
  },
  'scribe add-mcp': {
    usage: 'scribe add-mcp --org ORG_ID --slug SLUG --url URL [--header "Name: value"]...',
    async run(flags, s) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      const header = flags.header;
      const server = await s.mcpServers.add(operatorActor(org.id), required(flags, 'slug'), { url: required(flags, 'url'), headers: Array.isArray(header) ? header : [] });
      return { id: server.id, url: server.url };
    },
  },
  'scribe remove-mcp': {
    usage: 'scribe remove-mcp --id ID',
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.mcpServers);
      await s.mcpServers.remove(actor, id);
      return { id, removed: true };
    },
  },
  'scribe rename': {
    usage: 'scribe rename --org ORG_ID --slug SLUG --name NAME   (the slug, which the API and its clients use, stays)',
    async run(flags, s) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      const scribe = await s.scribes.rename(org.id, required(flags, 'slug'), required(flags, 'name'));
      await s.audit.record(operatorActor(org.id), 'scribe.rename', { type: 'scribe', id: scribe.id }, scribe.name);
      return { id: scribe.id, slug: scribe.slug, name: scribe.name };
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
      const messages = session.messages.map((m) => ({ author: m.author, text: m.text, partial: Boolean(m.partial), created_at: m.created_at }));
      const calls = await s.traces.of({ sessionId: session.id });
      return { id: session.id, state: session.state, error_message: session.error_message, messages, usage: traceTotals(calls).usage, trace: presentTrace(calls) };
    },
  },
  'session cancel': {
    usage: 'session cancel --id SESSION_ID',
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.sessions);
      const session = await s.sessions.cancel(actor, id);
      return { id, status: session.status };
    },
  },
  'task cancel': {
    usage: 'task cancel --id TASK_ID',
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.tasks);
      const task = await s.tasks.cancel(actor, id);
      return { id, status: task.status };
    },
  },
  'task show': {
    usage: 'task show --id TASK_ID',
    async run(flags, s) {
      const task = await s.tasks.find(required(flags, 'id'));
      const events = task.events.map((e) => ({ from: e.from_status, to: e.to_status, author: e.author, text: e.text, partial: Boolean(e.partial), at: e.created_at }));
      const calls = await s.traces.of({ taskId: task.id });
      return {
        id: task.id,
        status: task.status,
        title: task.title,
        result: task.result,
        last_error: task.last_error,
        events,
        usage: traceTotals(calls).usage,
        trace: presentTrace(calls),
      };
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
  'schedule create': {
    usage: 'schedule create --org ORG_ID --scribe SLUG --cron EXPR --summary TEXT [--title TEXT] [--acceptance-criteria TEXT] [--timezone ZONE] [--overlap skip|allow]',
    async run(flags, s) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      const schedule = await s.schedules.create(operatorActor(org.id), required(flags, 'scribe'), {
        ...scheduleFlags(flags),
        cron: given(flags, 'cron'),
        summary: given(flags, 'summary'),
      });
      return { id: schedule.id, next_run_at: schedule.next_run_at };
    },
  },
  'schedule edit': {
    usage: 'schedule edit --id ID [--cron EXPR] [--summary TEXT] [--title TEXT] [--acceptance-criteria TEXT] [--timezone ZONE] [--overlap skip|allow]',
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.schedules);
      const current = await s.schedules.get(actor.organizationId, id);
      const schedule = await s.schedules.update(actor, id, {
        ...current,
        ...scheduleFlags(flags),
        cron: optional(flags, 'cron') ?? current.cron,
        summary: optional(flags, 'summary') ?? current.summary,
      });
      return { id: schedule.id, next_run_at: schedule.next_run_at };
    },
  },
  'schedule pause': pausing('pause'),
  'schedule resume': pausing('resume'),
  'schedule run-now': {
    usage: 'schedule run-now --id ID',
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.schedules);
      const fired = await s.schedules.runNow(actor, id);
      return { id, request_id: fired.request_id };
    },
  },
  'schedule delete': {
    usage: 'schedule delete --id ID',
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.schedules);
      await s.schedules.remove(actor, id);
      return { id, deleted: true };
    },
  },
  'schedule show': {
    usage: 'schedule show --id ID',
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.schedules);
      const schedule = await s.schedules.get(actor.organizationId, id);
      const fires = (await s.schedules.fires(id, 20)).map((f) => ({
        fire_at: f.fire_at,
        outcome: f.outcome,
        reason: f.reason,
        request_id: f.request_id,
        missed_since: f.missed_since,
        manual: f.manual,
        run_by: f.run_by,
      }));
      return { ...presentSchedule(schedule), description: s.schedules.describe(schedule), fires };
    },
  },
  'schedule list': {
    usage: 'schedule list --org ORG_ID [--scribe SLUG]',
    async run(flags, s) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      const scribe = optional(flags, 'scribe');
      const scribeId = scribe === undefined ? undefined : (await s.scribes.getBySlug(org.id, scribe)).id;
      return { schedules: (await s.schedules.list(org.id, scribeId)).map(presentSchedule) };
    },
  },
  'channel create': {
    usage:
      'channel create --org ORG_ID --scribe SLUG --kind webhook [--mode task|chat] [--verify none|standard-webhooks|github|slack|hmac-sha256] [--secret S] [--name NAME]\n' +
      '  channel create --org ORG_ID --scribe SLUG --kind email --address ADDRESS [--mode task|chat] [--name NAME]',
    async run(flags, s) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      const input = {
        kind: required(flags, 'kind'),
        mode: optional(flags, 'mode'),
        name: optional(flags, 'name'),
        verify: optional(flags, 'verify'),
        secret: optional(flags, 'secret'),
        address: optional(flags, 'address'),
      };
      const { channel, secret } = await s.channels.create(operatorActor(org.id), required(flags, 'scribe'), input);
      return channel.kind === 'email' ? { id: channel.id, address: channel.address } : { id: channel.id, url: `/inbound/${channel.token}`, secret };
    },
  },
  'channel disable': enabling(false),
  'channel enable': enabling(true),
  'channel rotate-secret': {
    usage: 'channel rotate-secret --id ID',
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.channels);
      return { id, secret: await s.channels.rotateSecret(actor, id) };
    },
  },
  'channel list': {
    usage: 'channel list --org ORG_ID [--scribe SLUG]',
    async run(flags, s) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      const scribe = optional(flags, 'scribe');
      const scribeId = scribe === undefined ? undefined : (await s.scribes.getBySlug(org.id, scribe)).id;
      return { channels: (await s.channels.list(org.id, scribeId)).map(presentChannel) };
    },
  },
  'channel show': {
    usage: 'channel show --id ID',
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.channels);
      const channel = await s.channels.get(actor.organizationId, id);
      const deliveries = (await s.channels.deliveries(id, 20)).map(({ received_at, sender, outcome, status, reason, request_id, session_id }) => ({
        received_at,
        sender,
        outcome,
        status,
        reason,
        request_id,
        session_id,
      }));
      return { ...presentChannel(channel), deliveries };
    },
  },
  'webhook create': {
    usage: `webhook create --org ORG_ID --url URL [--events ${EVENT_TYPES.join(',')}] [--description TEXT]`,
    async run(flags, s) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      const { endpoint, secret } = await s.webhooks.create(operatorActor(org.id), {
        url: required(flags, 'url'),
        events: eventsFlag(flags),
        description: optional(flags, 'description'),
      });
      return { id: endpoint.id, url: endpoint.url, secret, events: endpoint.events ?? [...EVENT_TYPES] };
    },
  },
  'webhook edit': {
    usage: 'webhook edit --id ID [--url URL] [--events a,b,...|all] [--description TEXT] [--enabled true|false]',
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.webhooks);
      const enabled = optional(flags, 'enabled');
      if (enabled !== undefined && enabled !== 'true' && enabled !== 'false') throw new UsageError('--enabled must be true or false');
      const endpoint = await s.webhooks.update(actor, id, {
        url: optional(flags, 'url'),
        events: eventsFlag(flags),
        description: optional(flags, 'description'),
        enabled: enabled === undefined ? undefined : enabled === 'true',
      });
      return presentEndpoint(endpoint);
    },
  },
  'webhook delete': {
    usage: 'webhook delete --id ID',
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.webhooks);
      await s.webhooks.remove(actor, id);
      return { id, deleted: true };
    },
  },
  'webhook list': {
    usage: 'webhook list --org ORG_ID',
    async run(flags, s) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      return { webhooks: (await s.webhooks.list(org.id)).map(presentEndpoint) };
    },
  },
  'webhook show': {
    usage: 'webhook show --id ID',
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.webhooks);
      const endpoint = await s.webhooks.get(actor.organizationId, id);
      const deliveries = (await s.webhooks.deliveries(id, {}, 20)).map(
        ({ id, event_id, event_type, status, attempts, last_attempt_at, response_status, error, duration_ms, available_at, created_at }) => ({
          id,
          event_id,
          event_type,
          status,
          attempts,
          last_attempt_at,
          response_status,
          error,
          duration_ms,
          next_attempt_at: status === 'pending' ? available_at : null,
          created_at,
        }),
      );
      return { ...presentEndpoint(endpoint), deliveries };
    },
  },
  'webhook test': {
    usage: 'webhook test --id ID',
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.webhooks);
      return { id, event_id: (await s.webhooks.sendTest(actor, id)).eventId };
    },
  },
  'webhook rotate-secret': {
    usage: 'webhook rotate-secret --id ID',
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.webhooks);
      const { secret, previousValidUntil } = await s.webhooks.rotateSecret(actor, id);
      return { id, secret, previous_secret_valid_until: previousValidUntil };
    },
  },
  'webhook redeliver': {
    usage: 'webhook redeliver --id ID (--delivery DELIVERY_ID | --failed-from TIME --failed-to TIME)',
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.webhooks);
      const delivery = optional(flags, 'delivery');
      if (delivery !== undefined) {
        // One delivery: redelivered, or refused with the reason.
        await s.webhooks.redeliver(actor, id, delivery);
        return { id, redelivered: 1 };
      }
      return { id, redelivered: await s.webhooks.redeliverFailed(actor, id, { from: required(flags, 'failed-from'), to: required(flags, 'failed-to') }) };
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
    usage: 'user create --org ORG_ID --email EMAIL [--role admin|viewer]   (the password on standard input, or typed at a prompt)',
    alsoTakes: ['password'],
    async run(flags, s, io) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      const email = required(flags, 'email');
      const role = optional(flags, 'role');
      let password = optional(flags, 'password');
      if (password === undefined) password = await io.readPassword();
      else io.warn('warning: --password puts the password in the shell history and the process list; give it on standard input instead');
      return s.users.create({ organizationId: org.id, email, password, role }, operatorActor(org.id));
    },
  },
  'user list': {
    usage: 'user list --org ORG_ID',
    async run(flags, s) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      const users = await s.users.list(org.id);
      return { users: users.map(({ id, email, role, disabled_at, last_sign_in_at }) => ({ id, email, role, disabled: disabled_at !== null, last_sign_in_at })) };
    },
  },
  'user invite': {
    usage: 'user invite --org ORG_ID --email EMAIL [--role admin|viewer]   (the link is shown only here)',
    async run(flags, s) {
      const org = await s.organizations.getOrganization(required(flags, 'org'));
      const invited = await s.users.invite(operatorActor(org.id), { email: required(flags, 'email'), role: optional(flags, 'role') });
      return { id: invited.id, email: invited.email, role: invited.role, invite_url: invited.url };
    },
  },
  'user set-role': {
    usage: 'user set-role --id USER_ID --role admin|viewer',
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.users);
      const user = await s.users.setRole(actor, id, required(flags, 'role'));
      return { id, role: user.role };
    },
  },
  'user disable': disablingUser(true),
  'user enable': disablingUser(false),
  'user delete': {
    usage: 'user delete --id USER_ID',
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.users);
      await s.users.remove(actor, id);
      return { id, deleted: true };
    },
  },
  'user reset': {
    usage: 'user reset --id USER_ID   (a one-time link to set a new password, shown only here)',
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.users);
      return { id, reset_url: (await s.users.reset(actor, id)).url };
    },
  },
  'user set-password': {
    usage: 'user set-password --id USER_ID   (the password on standard input, or typed at a prompt)',
    alsoTakes: ['password'],
    async run(flags, s, io) {
      if (flags.password !== undefined) throw new UsageError('--password is not taken here: give the password on standard input');
      const { actor, id } = await byId(flags, s.users);
      await s.users.setPassword(actor, id, await io.readPassword());
      return { id };
    },
  },
};

/** `schedule pause` and `schedule resume`: the same command but for the change. */
function pausing(verb: 'pause' | 'resume'): Command {
  return {
    usage: `schedule ${verb} --id ID`,
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.schedules);
      const schedule = await s.schedules[verb](actor, id);
      return { id: schedule.id, paused: schedule.paused, next_run_at: schedule.next_run_at };
    },
  };
}

/** `user disable` and `user enable`: the same command but for the change. */
function disablingUser(disabled: boolean): Command {
  return {
    usage: `user ${disabled ? 'disable' : 'enable'} --id USER_ID`,
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.users);
      await s.users.setDisabled(actor, id, disabled);
      return { id, disabled };
    },
  };
}

/** `channel disable` and `channel enable`: the same command but for the change. */
function enabling(enabled: boolean): Command {
  return {
    usage: `channel ${enabled ? 'enable' : 'disable'} --id ID`,
    async run(flags, s) {
      const { actor, id } = await byId(flags, s.channels);
      await s.channels.setEnabled(actor, id, enabled);
      return enabled ? { id, enabled: true } : { id, disabled: true };
    },
  };
}

/** A channel as the CLI prints it: never its secret (shown once, at creation or rotation). */
function presentChannel(channel: ChannelListRow) {
  const { id, scribe_slug, kind, mode, name, token, verify, address, enabled, created_at } = channel;
  return { id, scribe: scribe_slug, kind, mode, name, ...(kind === 'webhook' ? { url: `/inbound/${token}`, verify } : { address }), enabled, created_at };
}

/** A scribe's agent settings as the CLI prints them: whether a key is set, never the key. */
function presentAgent(scribe: ScribeRow) {
  const { id, slug, agent, instructions, model, model_base_url, model_api_key, model_vision, max_tool_rounds, token_budget, max_concurrency } = scribe;
  return {
    id,
    slug,
    agent,
    instructions,
    model,
    base_url: model_base_url,
    api_key_set: model_api_key !== null,
    vision: model_vision,
    max_tool_rounds,
    token_budget,
    max_concurrency,
  };
}

/** The thing named by --id (a schedule, channel, webhook, MCP server or user), and the operator acting on its organization. */
async function byId(flags: Flags, service: { organizationOf(id: string): Promise<string> }) {
  const id = required(flags, 'id');
  return { id, actor: operatorActor(await service.organizationOf(id)) };
}

/** `--name true|false`: the boolean, or undefined when not given. */
function booleanFlag(flags: Flags, name: string): boolean | undefined {
  const value = optional(flags, name);
  if (value === undefined) return undefined;
  if (value !== 'true' && value !== 'false') throw new UsageError(`--${name} must be true or false`);
  return value === 'true';
}

/** `--name N`: a whole number; empty or `none`: null (back to the default); undefined when not given. */
function wholeFlag(flags: Flags, name: string): number | null | undefined {
  const value = optional(flags, name);
  if (value === undefined) return undefined;
  if (value.trim() === '' || value.trim() === 'none') return null;
  if (!/^\d+$/.test(value.trim())) throw new UsageError(`--${name} must be a whole number`);
  return Number(value);
}

/** `--events a,b,...`: those types; `all` or no flag: every type. */
function eventsFlag(flags: Flags): string[] | null | undefined {
  const value = optional(flags, 'events');
  if (value === undefined) return undefined;
  return value.trim() === 'all' ? null : value.split(',');
}

/** An endpoint as the CLI prints it: never its secret (shown once, at creation or rotation). */
function presentEndpoint(endpoint: EndpointRow) {
  const { id, url, description, events, enabled, disabled_reason, failing_since, created_at } = endpoint;
  return { id, url, description, events: events ?? [...EVENT_TYPES], enabled, disabled_reason, failing_since, created_at };
}

/** The schedule flags given; absent ones stay undefined (create's defaults, edit's current values). */
function scheduleFlags(flags: Flags) {
  // A blank zone would read as UTC (a script's unset "$TZ"), moving a schedule without a word.
  if (optional(flags, 'timezone')?.trim() === '') throw new ValidationError('--timezone is blank: give an IANA name such as Europe/Berlin, or leave it out');
  const values = {
    title: optional(flags, 'title'),
    acceptance_criteria: optional(flags, 'acceptance-criteria'),
    timezone: optional(flags, 'timezone'),
    overlap: optional(flags, 'overlap'),
  };
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined));
}

function presentSchedule(schedule: ScheduleListRow) {
  const { id, scribe_slug, cron, timezone, overlap, summary, title, acceptance_criteria, paused, next_run_at, last_fire_at, created_at } = schedule;
  return { id, scribe: scribe_slug, cron, timezone, overlap, summary, title, acceptance_criteria, paused, next_run_at, last_fire_at, created_at };
}

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
  scribe: { type: 'string' },
  cron: { type: 'string' },
  summary: { type: 'string' },
  title: { type: 'string' },
  'acceptance-criteria': { type: 'string' },
  timezone: { type: 'string' },
  overlap: { type: 'string' },
  kind: { type: 'string' },
  mode: { type: 'string' },
  verify: { type: 'string' },
  secret: { type: 'string' },
  address: { type: 'string' },
  url: { type: 'string' },
  events: { type: 'string' },
  description: { type: 'string' },
  enabled: { type: 'string' },
  delivery: { type: 'string' },
  'failed-from': { type: 'string' },
  'failed-to': { type: 'string' },
  model: { type: 'string' },
  'base-url': { type: 'string' },
  'api-key': { type: 'string' },
  vision: { type: 'string' },
  'max-tool-rounds': { type: 'string' },
  'token-budget': { type: 'string' },
  'max-concurrency': { type: 'string' },
  header: { type: 'string', multiple: true },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The usage of `some` commands (all by default), one per line; `<command> --help` prints one. */
export function usage(some: Record<string, Command> = commands): string {
  return [
    'usage: npm run --silent admin -- <command> [--flags]',
    '',
    ...Object.values(some).map((c) => `  ${c.usage}`),
    '',
    'Each prints one JSON object; `<command> --help` shows its flags.',
  ].join('\n');
}
