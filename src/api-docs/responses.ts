import { z } from 'zod';
import { ENTITY_TYPES, REQUEST_STATUSES } from '../requests/schemas.js';
import { TASK_STATUSES } from '../tasks/queries.js';
import { SESSION_STATES } from '../sessions/queries.js';

/**
 * The shapes of the API's answers, as zod schemas: the OpenAPI document is generated from
 * them, and test/docs/openapi.test.ts checks real responses against them.
 */
const timestamp = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
  .describe('ISO 8601 UTC with milliseconds');
const uuid = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);

export const requestObject = z
  .object({
    id: z
      .string()
      .regex(/^req_[0-9A-HJKMNP-TV-Z]{26}$/)
      .describe('`req_` and a ULID'),
    scribe_id: z.string().describe('The slug of the scribe'),
    status: z.enum(REQUEST_STATUSES),
    entity_type: z.enum(ENTITY_TYPES),
    entity_id: uuid.nullable().describe('The task, once fulfilled'),
    error_message: z.string().nullable().describe('Why it failed, once failed'),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .strict();

export const requestEnvelope = z.object({ request: requestObject }).strict();
export const requestList = z.object({ requests: z.array(requestObject), next_cursor: z.string().nullable() }).strict();
export const chatResponse = z.object({ session_id: uuid }).strict();

const usage = z.object({ input_tokens: z.number().int(), output_tokens: z.number().int() }).strict().describe("Tokens of the work's model calls so far");

export const taskObject = z
  .object({
    id: uuid,
    scribe_id: z.string().describe('The slug of the scribe'),
    request_id: z.string().nullable().describe('The receipt it was made from'),
    status: z.enum(TASK_STATUSES),
    title: z.string(),
    summary: z.string(),
    acceptance_criteria: z.string().nullable(),
    result: z.string().nullable().describe('What the scribe delivered, once done'),
    question: z.string().nullable().describe('The last question the scribe asked, once it asked one'),
    error: z.string().nullable().describe('Why the last run failed, if it did'),
    attachments: z.array(z.object({ filename: z.string(), content_type: z.string(), size: z.number().int() }).strict()),
    usage,
    created_at: timestamp,
    updated_at: timestamp,
  })
  .strict();
export const taskEnvelope = z.object({ task: taskObject }).strict();
export const taskList = z.object({ tasks: z.array(taskObject), next_cursor: z.string().nullable() }).strict();

export const messageObject = z
  .object({
    id: z.number().int(),
    author: z.enum(['user', 'scribe', 'staff']),
    text: z.string(),
    partial: z.boolean().describe('A reply the scribe is still writing'),
    created_at: timestamp,
  })
  .strict();
export const sessionObject = z
  .object({
    id: uuid,
    scribe_id: z.string().describe('The slug of the scribe'),
    status: z.enum(SESSION_STATES),
    messages: z.array(messageObject),
    usage,
    created_at: timestamp,
    updated_at: timestamp,
  })
  .strict();
export const sessionEnvelope = z.object({ session: sessionObject }).strict();

const fieldValue = z.union([z.string(), z.number(), z.boolean(), z.array(uuid)]);
export const entryObject = z
  .object({
    id: uuid,
    entry_type_id: uuid,
    fields: z.record(z.string(), fieldValue).describe('Values by field name: text, number, boolean, date (YYYY-MM-DD) or relationship (entry ids)'),
    draft: z.boolean(),
    archived: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .strict();
export const entryEnvelope = z.object({ data: entryObject, meta: z.object({}).strict(), error: z.null() }).strict();
export const entryList = z
  .object({
    data: z.array(entryObject),
    meta: z.object({ next_cursor: z.string().nullable(), limit: z.number().int() }).strict(),
    error: z.null(),
  })
  .strict();

export const errorA = z.object({ error: z.string() }).strict().describe('Form A: task dispatch and chat');
export const errorB = z
  .object({ data: z.null(), meta: z.object({}).strict(), error: z.string() })
  .strict()
  .describe('Form B: entries');

export const health = z.object({ status: z.literal('ok') }).strict();
export const readiness = z
  .object({
    status: z.enum(['ready', 'not ready']),
    checks: z.object({ database: z.string(), migrations: z.string(), dispatcher: z.string(), agents: z.string() }).strict(),
  })
  .strict();
