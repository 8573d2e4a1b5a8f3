import { z } from 'zod';
import { MAX_ATTACHMENTS, submitRequestBody, listRequestsQuery } from '../requests/schemas.js';
import { chatBody } from '../sessions/schemas.js';
import { REQUEST_LIST_LIMIT } from '../requests/routes.js';
import { ENTRY_LIST_LIMIT } from '../entries/routes.js';
import { encodeCursor } from '../http/cursor.js';
import * as responses from './responses.js';

/**
 * The OpenAPI 3.1 description of the API, generated from the zod schemas that validate the
 * requests (and describe the responses), served at /api/v1/openapi.json and browsed at
 * /docs. Every example in it is checked against its schema by test/docs/openapi.test.ts.
 */

/** A zod schema as the JSON Schema (2020-12) OpenAPI 3.1 takes, describing what callers send. */
function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: object, example?: unknown) => ({ 'application/json': { schema, ...(example === undefined ? {} : { example }) } });

export const examples = {
  submit: { task: { summary: 'Summarize the open support tickets', acceptance_criteria: 'A bullet list', attachments: [{ url: 'https://example.com/tickets.csv', content_type: 'text/csv' }] } },
  chat: { message: 'What are you working on?', end_session_immediately: false },
  request: {
    request: {
      id: 'req_01JD5V2Q8ZK3M4N5P6Q7R8S9T0',
      scribe_id: 'atlas',
      status: 'accepted',
      entity_type: 'task',
      entity_id: null,
      error_message: null,
      created_at: '2026-11-21T09:30:00.123Z',
      updated_at: '2026-11-21T09:30:00.123Z',
    },
  },
  requestList: {
    requests: [
      {
        id: 'req_01JD5V2Q8ZK3M4N5P6Q7R8S9T0',
        scribe_id: 'atlas',
        status: 'fulfilled',
        entity_type: 'task',
        entity_id: '01935f00-0000-7000-8000-0000000000aa',
        error_message: null,
        created_at: '2026-11-21T09:30:00.123Z',
        updated_at: '2026-11-21T09:30:00.131Z',
      },
    ],
    // Made by the encoder itself, so the example is a cursor the API accepts.
    next_cursor: encodeCursor({ createdAt: '2026-11-21T09:30:00.123Z', id: 'req_01JD5V2Q8ZK3M4N5P6Q7R8S9T0' }),
  },
  chatResponse: { session_id: '01935f00-0000-7000-8000-0000000005e1' },
  entry: {
    data: {
      id: '01935f00-0000-7000-8000-0000000e0001',
      entry_type_id: '01935f00-0000-7000-8000-00000000c002',
      fields: { Name: 'Ada Lovelace', Email: 'ada@example.com', Company: ['01935f00-0000-7000-8000-0000000e0002'] },
      draft: false,
      archived: false,
      created_at: '2026-11-21T09:30:00.123Z',
      updated_at: '2026-11-21T09:30:00.123Z',
    },
    meta: {},
    error: null,
  },
  entryList: {
    data: [
      {
        id: '01935f00-0000-7000-8000-0000000e0002',
        entry_type_id: '01935f00-0000-7000-8000-00000000c001',
        fields: { Name: 'Acme Corp', City: 'Zurich', Employees: 4200, Public: true },
        draft: false,
        archived: false,
        created_at: '2026-11-21T09:30:00.123Z',
        updated_at: '2026-11-21T09:30:00.123Z',
      },
    ],
    meta: { next_cursor: null, limit: 100 },
    error: null,
  },
} as const;

/** The request body examples and the schemas that validate them (checked by the tests). */
export const requestExamples = [
  { schema: submitRequestBody, example: examples.submit },
  { schema: chatBody, example: examples.chat },
];

/** The response examples and the schemas they follow (checked by the tests). */
export const responseExamples = [
  { schema: responses.requestEnvelope, example: examples.request },
  { schema: responses.requestList, example: examples.requestList },
  { schema: responses.chatResponse, example: examples.chatResponse },
  { schema: responses.entryEnvelope, example: examples.entry },
  { schema: responses.entryList, example: examples.entryList },
];

function errors(form: 'A' | 'B', statuses: Record<number, string>) {
  return Object.fromEntries(
    Object.entries(statuses).map(([status, text]) => [
      status,
      { description: text, content: json(ref(form === 'A' ? 'ErrorA' : 'ErrorB'), form === 'A' ? { error: text } : { data: null, meta: {}, error: text }) },
    ]),
  );
}

const common = { 401: 'API key is required', 429: 'Rate limit exceeded', 500: 'Internal server error' };
const commonB = { 401: 'Unauthorized', 429: 'Rate limit exceeded', 500: 'Internal server error' };

const pathParam = (name: string, description: string) => ({ name, in: 'path', required: true, description, schema: { type: 'string' } });
const queryParam = (name: string, description: string, schema: object) => ({ name, in: 'query', required: false, description, schema });
const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: 'Makes the call safe to retry: the same key and body replay the first response (header `Idempotent-Replayed: true`) for 24 hours; other parameters → 422, while the first runs → 409.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
};

export function openApiDocument(): Record<string, unknown> {
  const listQuery = jsonSchema(listRequestsQuery) as { properties: Record<string, object> };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Scribe API',
      version: '1.0.0',
      description: 'Task dispatch with receipts, chat with scribes, and entry reads with search. All access is scoped to the organization of the API key.',
    },
    servers: [{ url: '/' }],
    security: [{ apiKey: [] }],
    tags: [
      { name: 'Task dispatch' },
      { name: 'Chat' },
      { name: 'Entries' },
      { name: 'Operations', description: 'No API key needed.' },
    ],
    paths: {
      '/api/v1/scribes/{scribe_id}/requests': {
        post: {
          tags: ['Task dispatch'],
          operationId: 'submitTask',
          summary: 'Submit a task',
          description: `Returns a receipt at once; the task is dispatched in the background. At most ${MAX_ATTACHMENTS} attachments, each downloaded before the receipt is returned.`,
          parameters: [pathParam('scribe_id', 'The scribe\'s slug'), idempotencyKey],
          requestBody: { required: true, content: json(ref('SubmitRequestBody'), examples.submit) },
          responses: {
            202: { description: 'Accepted', content: json(ref('RequestEnvelope'), examples.request) },
            ...errors('A', {
              ...common,
              400: 'Invalid JSON body',
              404: 'Scribe not found',
              409: 'A request with this Idempotency-Key is still in progress',
              413: 'Request body too large',
              422: 'Summary is required',
            }),
          },
        },
        get: {
          tags: ['Task dispatch'],
          operationId: 'listRequests',
          summary: 'List the scribe\'s requests',
          description: 'The receipts of one scribe, newest first, paged by cursor: pass `next_cursor` as `after` for the next page.',
          parameters: [
            pathParam('scribe_id', 'The scribe\'s slug'),
            queryParam('status', 'Only receipts in this status', listQuery.properties.status!),
            queryParam('entity_type', 'Only receipts of this entity type', listQuery.properties.entity_type!),
            queryParam('limit', `Page size, default ${REQUEST_LIST_LIMIT.fallback}, clamped to ${REQUEST_LIST_LIMIT.max}`, { type: 'integer', minimum: 1 }),
            queryParam('after', 'The `next_cursor` of the previous page', { type: 'string' }),
          ],
          responses: {
            200: { description: 'A page of receipts', content: json(ref('RequestList'), examples.requestList) },
            ...errors('A', { ...common, 400: 'Invalid cursor format', 404: 'Scribe not found' }),
          },
        },
      },
      '/api/v1/requests/{id}': {
        get: {
          tags: ['Task dispatch'],
          operationId: 'getRequest',
          summary: 'Poll a request',
          description: 'The receipt as it is now: `accepted`, `dispatched`, then `fulfilled` (with the task\'s id in `entity_id`) or `failed` (with `error_message`).',
          parameters: [pathParam('id', 'The receipt id, `req_…`')],
          responses: {
            200: { description: 'The receipt', content: json(ref('RequestEnvelope'), examples.request) },
            ...errors('A', { ...common, 404: 'Request not found' }),
          },
        },
      },
      '/api/v1/scribes/{scribe_id}/chat': {
        post: {
          tags: ['Chat'],
          operationId: 'sendChatMessage',
          summary: 'Send a message to a scribe',
          description: 'Creates a session that the scribe answers in the background; a powered-off scribe\'s session waits as queued.',
          parameters: [pathParam('scribe_id', 'The scribe\'s slug'), idempotencyKey],
          requestBody: { required: false, content: json(ref('ChatBody'), examples.chat) },
          responses: {
            202: { description: 'Accepted', content: json(ref('ChatResponse'), examples.chatResponse) },
            ...errors('A', { ...common, 400: 'Invalid JSON body', 404: 'Scribe not found', 409: 'A request with this Idempotency-Key is still in progress', 413: 'Request body too large', 422: 'message must be a string' }),
          },
        },
      },
      '/api/v1/entries/{id}': {
        get: {
          tags: ['Entries'],
          operationId: 'getEntry',
          summary: 'Get one entry',
          description: 'One entry of the organization, with its fields by name.',
          parameters: [pathParam('id', 'The entry id')],
          responses: {
            200: { description: 'The entry', content: json(ref('EntryEnvelope'), examples.entry) },
            ...errors('B', { ...commonB, 404: 'Entry not found' }),
          },
        },
      },
      '/api/v1/entry_types/{entry_type_id}/entries': {
        get: {
          tags: ['Entries'],
          operationId: 'listEntries',
          summary: 'List entries of an entry type',
          description: 'Oldest first, paged by cursor; drafts and archived entries only when asked.',
          parameters: [
            pathParam('entry_type_id', 'The entry type id'),
            queryParam('q', 'Search: words, `Field:value`, `Field>n`, `relationship:Name`, `&&`, `||`, parentheses. At most 2,000 characters, 20 terms and groups nested 100 deep; past a limit, 400 `Invalid search query: <reason>`', { type: 'string', maxLength: 2000 }),
            queryParam('include_drafts', 'Include drafts', { type: 'boolean' }),
            queryParam('include_archived', 'Include archived entries', { type: 'boolean' }),
            queryParam('limit', `Page size, default ${ENTRY_LIST_LIMIT.fallback}, clamped to ${ENTRY_LIST_LIMIT.max}`, { type: 'integer', minimum: 1 }),
            queryParam('after', 'The `next_cursor` of the previous page', { type: 'string' }),
          ],
          responses: {
            200: { description: 'A page of entries', content: json(ref('EntryList'), examples.entryList) },
            ...errors('B', { ...commonB, 400: 'Invalid search query: expected a term after "&&" at position 12', 404: 'Entry type not found' }),
          },
        },
      },
      '/api/v1/openapi.json': {
        get: { tags: ['Operations'], operationId: 'getOpenApiDocument', summary: 'This document', description: 'The OpenAPI 3.1 description of this API, from which clients can be generated.', security: [], responses: { 200: { description: 'OpenAPI 3.1', content: json({ type: 'object' }) } } },
      },
      '/healthz': {
        get: { tags: ['Operations'], operationId: 'getHealth', summary: 'Liveness', description: 'Answers while the process serves requests; it does not look at the database.', security: [], responses: { 200: { description: 'The process answers', content: json(ref('Health'), { status: 'ok' }) } } },
      },
      '/readyz': {
        get: {
          tags: ['Operations'],
          operationId: 'getReadiness',
          summary: 'Readiness',
          description: 'Ready when the database answers, migrations are current and the background work has looked for work lately.',
          security: [],
          responses: {
            200: { description: 'Ready', content: json(ref('Readiness'), { status: 'ready', checks: { database: 'ok', migrations: 'ok', dispatcher: 'ok', agents: 'ok' } }) },
            503: { description: 'Not ready; each failing check says why', content: json(ref('Readiness')) },
          },
        },
      },
      '/metrics': {
        get: {
          tags: ['Operations'],
          operationId: 'getMetrics',
          summary: 'Prometheus metrics',
          description: 'With METRICS_TOKEN set, requires `Authorization: Bearer <token>`.',
          security: [],
          responses: { 200: { description: 'Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } }, 401: { description: 'Token missing or wrong' } },
        },
      },
    },
    components: {
      securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' } },
      schemas: {
        SubmitRequestBody: jsonSchema(submitRequestBody),
        ChatBody: jsonSchema(chatBody),
        RequestEnvelope: jsonSchema(responses.requestEnvelope),
        RequestList: jsonSchema(responses.requestList),
        ChatResponse: jsonSchema(responses.chatResponse),
        EntryEnvelope: jsonSchema(responses.entryEnvelope),
        EntryList: jsonSchema(responses.entryList),
        ErrorA: jsonSchema(responses.errorA),
        ErrorB: jsonSchema(responses.errorB),
        Health: jsonSchema(responses.health),
        Readiness: jsonSchema(responses.readiness),
      },
    },
  };
}
