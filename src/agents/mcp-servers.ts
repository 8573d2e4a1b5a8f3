import type { Db } from '../db/knex.js';
import type { Actor, AuditLog } from '../audit/service.js';
import { type Clock, isoNow } from '../lib/clock.js';
import { UUID_PATTERN, newId } from '../lib/ids.js';
import { NotFoundError, ValidationError } from '../http/errors.js';
import type { AddressPolicy } from '../net/address-policy.js';
import { checkUserUrl } from '../net/user-url.js';
import type { ScribeService } from '../scribes/service.js';
import type { SecretBox } from '../secrets/secret-box.js';
import * as queries from './queries.js';
import type { McpServerRow } from './queries.js';

export const messages = {
  serverNotFound: 'MCP server not found',
  invalidUrl: 'MCP server URL must be an http:// or https:// URL without credentials, at most 2000 characters',
  privateAddress: 'MCP server URL must not point at a private or local address (ATTACHMENTS_ALLOW_PRIVATE=true allows it)',
  // The line's number, never its text: a header line holds a secret (an Authorization value).
  invalidHeader: (line: number) => `Header line ${line} must be "Name: value"`,
  tooManyServers: 'A scribe may have at most 10 MCP servers',
};

const MAX_SERVERS = 10;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** An MCP server as staff see it: the header names, never their values. */
export function presentMcpServer(server: McpServerRow) {
  return { id: server.id, url: server.url, header_names: Object.keys(server.headers), created_at: server.created_at };
}

export type McpServerService = ReturnType<typeof createMcpServerService>;

/**
 * The MCP servers a scribe's openai agent takes tools from: added and removed by staff
 * (console) and the operator (CLI), each change audited. URLs obey the attachments' address
 * policy, here for IP addresses and again at connect time (agents/mcp.ts) for names.
 */
export function createMcpServerService({
  db,
  clock,
  audit,
  scribes,
  policy,
  secrets,
}: {
  db: Db;
  clock: Clock;
  audit: AuditLog;
  scribes: ScribeService;
  policy: AddressPolicy;
  /** Seals the headers where they are stored. */
  secrets: SecretBox;
}) {
  const checkUrl = (value: string) => checkUserUrl(value, policy, { invalid: messages.invalidUrl, privateAddress: messages.privateAddress });

  /** `Name: value` lines into an object; a bad line is refused with its text. */
  function checkHeaders(lines: readonly string[]): Record<string, string> {
    // No prototype: a header named __proto__ is a header like any other.
    const headers = Object.create(null) as Record<string, string>;
    for (const [index, line] of lines
      .map((l) => l.trim())
      .filter(Boolean)
      .entries()) {
      const colon = line.indexOf(':');
      const name = colon > 0 ? line.slice(0, colon).trim() : '';
      const value = colon > 0 ? line.slice(colon + 1).trim() : '';
      if (!HEADER_NAME.test(name) || !value || /[\r\n]/.test(value)) throw new ValidationError(messages.invalidHeader(index + 1));
      headers[name] = value;
    }
    return headers;
  }

  return {
    async add(actor: Actor, slug: string, input: { url: string; headers?: readonly string[] }): Promise<McpServerRow> {
      const scribe = await scribes.getBySlug(actor.organizationId, slug);
      const row: McpServerRow = {
        id: newId(),
        organization_id: actor.organizationId,
        scribe_id: scribe.id,
        url: checkUrl(input.url),
        headers: checkHeaders(input.headers ?? []),
        created_at: isoNow(clock),
      };
      if ((await queries.listMcpServers(db, secrets, scribe.id)).length >= MAX_SERVERS) throw new ValidationError(messages.tooManyServers);
      await db.transaction(async (trx) => {
        await queries.insertMcpServer(trx, secrets, row);
        await audit.record(actor, 'scribe.add_mcp', { type: 'scribe', id: scribe.id }, row.url, trx);
      });
      return row;
    },

    async remove(actor: Actor, id: string): Promise<void> {
      const server = UUID_PATTERN.test(id) ? await queries.findMcpServer(db, secrets, actor.organizationId, id) : undefined;
      if (!server) throw new NotFoundError(messages.serverNotFound);
      await db.transaction(async (trx) => {
        await queries.deleteMcpServer(trx, id);
        await audit.record(actor, 'scribe.remove_mcp', { type: 'scribe', id: server.scribe_id }, server.url, trx);
      });
    },

    /** The server's organization, for the admin CLI (which names a server by id alone). */
    async organizationOf(id: string): Promise<string> {
      const server = UUID_PATTERN.test(id) ? await queries.findMcpServerById(db, secrets, id) : undefined;
      if (!server) throw new NotFoundError(messages.serverNotFound);
      return server.organization_id;
    },

    list: (scribeId: string) => queries.listMcpServers(db, secrets, scribeId),
  };
}
