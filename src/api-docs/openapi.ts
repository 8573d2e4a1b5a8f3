import { z } from 'zod';
import { MAX_ATTACHMENTS, submitRequestBody, listRequestsQuery } from '../requests/schemas.js';
import { chatBody, inputBody, messageBody } from '../sessions/schemas.js';
import { TASK_STATUSES } from '../tasks/queries.js';
import { REQUEST_LIST_LIMIT } from '../requests/routes.js';
import { ENTRY_LIST_LIMIT } from '../entries/routes.js';
import { encodeCursor } from '../http/cursor.js';
import * as responses from './responses.js';
import { messages as streamMessages } from '../streams/routes.js';

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
  submit: {
    task: {
      summary: 'Summarize the open support tickets',
      acceptance_criteria: 'A bullet list',
      attachments: [{ url: 'https://example.com/tickets.csv', content_type: 'text/csv' }],
    },
  },
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
  task: {
    task: {
      id: '01935f00-0000-7000-8000-0000000000a1',
      scribe_id: 'atlas',
      request_id: 'req_01JD7X3Z8Q4N2M5K6P7R8S9T0V',
      status: 'waiting',
      title: 'Summarize the open support tickets',
      summary: 'Summarize the open support tickets',
      acceptance_criteria: null,
      result: null,
      question: 'Which ticket queue do you mean?',
      error: null,
      attachments: [{ filename: 'tickets.csv', content_type: 'text/csv', size: 2048 }],
      usage: { input_tokens: 812, output_tokens: 64 },
      created_at: '2026-01-15T10:00:00.000Z',
      updated_at: '2026-01-15T10:00:03.120Z',
    },
  },
  session: {
    session: {
      id: '01935f00-0000-7000-8000-0000000000b2',
      scribe_id: 'atlas',
      status: 'running',
      messages: [
        { id: 1, author: 'user', text: 'Who is our contact at Acme?', partial: false, created_at: '2026-01-15T10:00:00.000Z' },
        { id: 2, author: 'scribe', text: 'Your contact at Acme is', partial: true, created_at: '2026-01-15T10:00:01.250Z' },
      ],
      usage: { input_tokens: 0, output_tokens: 0 },
      created_at: '2026-01-15T10:00:00.000Z',
      updated_at: '2026-01-15T10:00:00.000Z',
    },
  },
  input: { input: 'The support queue, last 7 days' },
  message: { message: 'And their phone number?' },
  taskStream:
    'id: 3\nevent: status\ndata: {"id":"01935f00-0000-7000-8000-0000000000a1","status":"in_progress",…}\n\nid: 4\nevent: delta\ndata: {"message_id":57,"text":"Three tickets are open: "}\n\n',
  sessionStream:
    'id: 2\nevent: message\ndata: {"id":1,"author":"user","text":"Who is our contact at Acme?","partial":false,"created_at":"2026-01-15T10:00:00.000Z"}\n\nid: 4\nevent: delta\ndata: {"message_id":2,"text":"Your contact at Acme is"}\n\n: keep-alive\n\n',
} as const;

/** The request body examples and the schemas that validate them (checked by the tests). */
export const requestExamples = [
  { schema: submitRequestBody, example: examples.submit },
  { schema: chatBody, example: examples.chat },
  { schema: inputBody, example: examples.input },
  { schema: messageBody, example: examples.message },
];

/** The response examples and the schemas they follow (checked by the tests). */
export const responseExamples = [
  { schema: responses.requestEnvelope, example: examples.request },
  { schema: responses.requestList, example: examples.requestList },
  { schema: responses.chatResponse, example: examples.chatResponse },
  { schema: responses.entryEnvelope, example: examples.entry },
  { schema: responses.entryList, example: examples.entryList },
  { schema: responses.taskEnvelope, example: examples.task },
  { schema: responses.sessionEnvelope, example: examples.session },
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
  description:
    'Makes the call safe to retry: the same key and body replay the first response (header `Idempotent-Replayed: true`) for 24 hours; other parameters → 422, while the first runs → 409.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
};

const lastEventId = {
  name: 'Last-Event-ID',
  in: 'header',
  required: false,
  description:
    'The `id:` of the last event received, a whole number: the stream goes on with the events after it, each once (browsers send it when they reconnect). Anything else answers 400 `Invalid Last-Event-ID: …`.',
  schema: { type: 'string' },
};

const streamDescription = (what: string, final: string) =>
  `Server-sent events, one per change of the ${what}: \`status\` (the whole ${what} object, with the status the event records), ` +
  `\`message\` (a message complete), \`delta\` (\`{"message_id", "text"}\`: text added to a reply or result being written). ` +
  `A change that writes a message sends that \`message\` before its \`status\`. ` +
  `Each event's \`id:\` is its number within the ${what}, so a client that reconnects with \`Last-Event-ID\` gets every later event exactly once, ` +
  `from any process. The stream ends after the event that makes the ${what} final (${final}), ` +
  `and on a ${what} already final once the events after \`Last-Event-ID\` are sent; a comment line every 15 s keeps it open through proxies.`;

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
      { name: 'Tasks', description: 'The tasks receipts made: read, answer, cancel.' },
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
          parameters: [pathParam('scribe_id', "The scribe's slug"), idempotencyKey],
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
          summary: "List the scribe's requests",
          description: 'The receipts of one scribe, newest first, paged by cursor: pass `next_cursor` as `after` for the next page.',
          parameters: [
            pathParam('scribe_id', "The scribe's slug"),
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
          description: "The receipt as it is now: `accepted`, `dispatched`, then `fulfilled` (with the task's id in `entity_id`) or `failed` (with `error_message`).",
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
          description: "Creates a session that the scribe answers in the background; a powered-off scribe's session waits as queued.",
          parameters: [pathParam('scribe_id', "The scribe's slug"), idempotencyKey],
          requestBody: { required: false, content: json(ref('ChatBody'), examples.chat) },
          responses: {
            202: { description: 'Accepted', content: json(ref('ChatResponse'), examples.chatResponse) },
            ...errors('A', {
              ...common,
              400: 'Invalid JSON body',
              404: 'Scribe not found',
              409: 'A request with this Idempotency-Key is still in progress',
              413: 'Request body too large',
              422: 'message must be a string',
            }),
          },
        },
      },
      '/api/v1/tasks/{id}': {
        get: {
          tags: ['Tasks'],
          operationId: 'getTask',
          summary: 'Read a task',
          description: 'The task a fulfilled receipt made (`entity_id`), as it is now: its result once `done`, its question while `waiting`, why its last run failed in `error`.',
          parameters: [pathParam('id', 'The task id')],
          responses: {
            200: { description: 'The task', content: json(ref('TaskEnvelope'), examples.task) },
            ...errors('A', { ...common, 404: 'Task not found' }),
          },
        },
      },
      '/api/v1/scribes/{scribe_id}/tasks': {
        get: {
          tags: ['Tasks'],
          operationId: 'listTasks',
          summary: "List the scribe's tasks",
          description: 'The tasks of one scribe, newest first, paged by cursor as receipts are.',
          parameters: [
            pathParam('scribe_id', "The scribe's slug"),
            queryParam('status', 'Only tasks in this status', { type: 'string', enum: [...TASK_STATUSES] }),
            queryParam('limit', `Page size, default ${REQUEST_LIST_LIMIT.fallback}, clamped to ${REQUEST_LIST_LIMIT.max}`, { type: 'integer', minimum: 1 }),
            queryParam('after', 'The `next_cursor` of the previous page', { type: 'string' }),
          ],
          responses: {
            200: { description: 'A page of tasks', content: json(ref('TaskList'), { tasks: [examples.task.task], next_cursor: null }) },
            ...errors('A', { ...common, 400: 'Invalid status', 404: 'Scribe not found' }),
          },
        },
      },
      '/api/v1/tasks/{id}/input': {
        post: {
          tags: ['Tasks'],
          operationId: 'answerTask',
          summary: 'Answer a waiting task',
          description: 'Gives the input a `waiting` task asked for; the task is `open` again and the scribe takes it up.',
          parameters: [pathParam('id', 'The task id'), idempotencyKey],
          requestBody: { required: true, content: json(ref('InputBody'), examples.input) },
          responses: {
            202: { description: 'Accepted; the task, now open', content: json(ref('TaskEnvelope')) },
            ...errors('A', { ...common, 400: 'Invalid JSON body', 404: 'Task not found', 409: 'Task is not waiting', 413: 'Request body too large', 422: 'Input is required' }),
          },
        },
      },
      '/api/v1/tasks/{id}/cancel': {
        post: {
          tags: ['Tasks'],
          operationId: 'cancelTask',
          summary: 'Cancel a task',
          description: 'Cancels an `open`, `in_progress` or `waiting` task; `cancelled` is final. Work under way stops within 2 seconds and records nothing more.',
          parameters: [pathParam('id', 'The task id'), idempotencyKey],
          responses: {
            200: { description: 'The task, cancelled', content: json(ref('TaskEnvelope')) },
            ...errors('A', { ...common, 400: 'Invalid JSON body', 404: 'Task not found', 409: 'Task is already finished', 413: 'Request body too large' }),
          },
        },
      },
      '/api/v1/sessions/{id}': {
        get: {
          tags: ['Chat'],
          operationId: 'getSession',
          summary: 'Read a session',
          description: 'The session (`session_id` of a chat message) with its transcript; a reply the scribe is still writing is a message with `partial: true`.',
          parameters: [pathParam('id', 'The session id')],
          responses: {
            200: { description: 'The session', content: json(ref('SessionEnvelope'), examples.session) },
            ...errors('A', { ...common, 404: 'Session not found' }),
          },
        },
      },
      '/api/v1/sessions/{id}/messages': {
        post: {
          tags: ['Chat'],
          operationId: 'sendSessionMessage',
          summary: 'Send a further message in a session',
          description: 'Adds the next message of the conversation; it is answered in order, after any answer under way.',
          parameters: [pathParam('id', 'The session id'), idempotencyKey],
          requestBody: { required: true, content: json(ref('MessageBody'), examples.message) },
          responses: {
            202: { description: 'Accepted; the session with the message', content: json(ref('SessionEnvelope')) },
            ...errors('A', { ...common, 400: 'Invalid JSON body', 404: 'Session not found', 409: 'Session is closed', 413: 'Request body too large', 422: 'Message is required' }),
          },
        },
      },
      '/api/v1/sessions/{id}/cancel': {
        post: {
          tags: ['Chat'],
          operationId: 'cancelSession',
          summary: 'Cancel a session',
          description: 'Cancels a `queued`, `running` or `waiting` session; `cancelled` is final. An answer under way stops within 2 seconds and records nothing.',
          parameters: [pathParam('id', 'The session id'), idempotencyKey],
          responses: {
            200: { description: 'The session, cancelled', content: json(ref('SessionEnvelope')) },
            ...errors('A', { ...common, 400: 'Invalid JSON body', 404: 'Session not found', 409: 'Session is closed', 413: 'Request body too large' }),
          },
        },
      },
      '/api/v1/tasks/{id}/events': {
        get: {
          tags: ['Tasks'],
          operationId: 'streamTaskEvents',
          summary: "Follow a task's events",
          description: streamDescription('task', '`done` or `cancelled`'),
          parameters: [pathParam('id', 'The task id'), lastEventId],
          responses: {
            200: { description: 'A stream of server-sent events', content: { 'text/event-stream': { schema: { type: 'string' }, example: examples.taskStream } } },
            ...errors('A', { ...common, 400: streamMessages.invalidLastEventId, 404: 'Task not found' }),
          },
        },
      },
      '/api/v1/sessions/{id}/events': {
        get: {
          tags: ['Chat'],
          operationId: 'streamSessionEvents',
          summary: "Follow a session's events",
          description: streamDescription('session', '`completed`, `failed` or `cancelled`'),
          parameters: [pathParam('id', 'The session id'), lastEventId],
          responses: {
            200: { description: 'A stream of server-sent events', content: { 'text/event-stream': { schema: { type: 'string' }, example: examples.sessionStream } } },
            ...errors('A', { ...common, 400: streamMessages.invalidLastEventId, 404: 'Session not found' }),
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
            queryParam(
              'q',
              'Search: words, `Field:value`, `Field>n`, `relationship:Name`, `&&`, `||`, parentheses. At most 2,000 characters, 20 terms and groups nested 100 deep; past a limit, 400 `Invalid search query: <reason>`',
              { type: 'string', maxLength: 2000 },
            ),
            queryParam('include_drafts', 'Include drafts', { type: 'boolean' }),
            queryParam('include_archived', 'Include archived entries', { type: 'boolean' }),
            queryParam('limit', `Page size, default ${ENTRY_LIST_LIMIT.fallback}, clamped to ${ENTRY_LIST_LIMIT.max}`, { type: 'integer', minimum: 1 }),
            queryParam('after', 'The `next_cursor` of the previous page', { type: 'string' }),
          ],
          responses: {
            200: { description: 'A page of entries', content: json(ref('EntryList'), examples.entryList) },
            ...errors('B', { ...commonB, 400: 'Invalid search query: expected a term after "&&" at position 12', 404: 'Entry type not found', 503: 'Search timed out' }),
          },
        },
      },
      '/api/v1/openapi.json': {
        get: {
          tags: ['Operations'],
          operationId: 'getOpenApiDocument',
          summary: 'This document',
          description: 'The OpenAPI 3.1 description of this API, from which clients can be generated.',
          security: [],
          responses: { 200: { description: 'OpenAPI 3.1', content: json({ type: 'object' }) } },
        },
      },
      '/healthz': {
        get: {
          tags: ['Operations'],
          operationId: 'getHealth',
          summary: 'Liveness',
          description: 'Answers while the process serves requests; it does not look at the database.',
          security: [],
          responses: { 200: { description: 'The process answers', content: json(ref('Health'), { status: 'ok' }) } },
        },
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
        InputBody: jsonSchema(inputBody),
        MessageBody: jsonSchema(messageBody),
        TaskEnvelope: jsonSchema(responses.taskEnvelope),
        TaskList: jsonSchema(responses.taskList),
        SessionEnvelope: jsonSchema(responses.sessionEnvelope),
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
