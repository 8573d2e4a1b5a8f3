import { z } from 'zod';
import { ValidationError, BadRequestError } from '../http/errors.js';
import { isMediaType } from './attachments/media-type.js';

export const messages = {
  bodyNotObject: 'Request body must be a JSON object',
  unsupportedActorKind: 'Unsupported actor_kind',
  taskNotObject: 'task must be an object',
  summaryRequired: 'Summary is required',
  tooManyAttachments: 'Maximum of 5 attachments allowed',
  attachmentsNotArray: 'attachments must be an array',
  attachmentNotObject: 'Each attachment must be an object',
  urlRequired: 'Attachment url is required',
  contentTypeRequired: 'Attachment content_type is required',
  contentTypeInvalid: 'Attachment content_type is invalid',
  invalidStatus: 'Invalid status',
  invalidEntityType: 'Invalid entity_type',
};

export const MAX_ATTACHMENTS = 5;
export const MAX_TITLE_LENGTH = 200;
export const REQUEST_STATUSES = ['accepted', 'dispatched', 'fulfilled', 'failed'] as const;
export const ENTITY_TYPES = ['task'] as const;
export type RequestStatus = (typeof REQUEST_STATUSES)[number];

const isMissing = (input: unknown) => input === undefined || input === null;

/**
 * 422 `<field> must not contain U+0000` for text holding that character: no database column
 * can store it (PostgreSQL refuses it), so it is refused on both databases alike.
 */
export const withoutNul = (field: string) => [(value: string | null | undefined) => !value?.includes('\0'), `${field} must not contain U+0000`] as const;

/** A string that must be present and not blank; `required` when it is not, `typeMessage` when it is no string. */
const requiredText = (required: string, typeMessage: string) =>
  z.string({ error: (issue) => (isMissing(issue.input) ? required : typeMessage) }).refine((value) => value.trim() !== '', required);

const optionalText = (field: string) =>
  z
    .string({ error: `${field} must be a string` })
    .nullish()
    .refine(...withoutNul(field));

const attachmentInput = z.object(
  {
    url: requiredText(messages.urlRequired, 'Attachment url must be a string').refine(...withoutNul('Attachment url')),
    // A blank one is missing; any other that is no media type is invalid (in the same place).
    // Control characters, U+0000 among them, make it invalid.
    content_type: requiredText(messages.contentTypeRequired, 'Attachment content_type must be a string').refine(
      (value) => value.trim() === '' || isMediaType(value),
      messages.contentTypeInvalid,
    ),
    filename: optionalText('Attachment filename'),
  },
  { error: messages.attachmentNotObject },
);

const taskInput = z.object(
  {
    summary: requiredText(messages.summaryRequired, 'summary must be a string').refine(...withoutNul('summary')),
    attachments: z.array(attachmentInput, { error: messages.attachmentsNotArray }).max(MAX_ATTACHMENTS, messages.tooManyAttachments).nullish(),
    title: optionalText('title').refine((title) => !title || title.length <= MAX_TITLE_LENGTH, `title must be at most ${MAX_TITLE_LENGTH} characters`),
    acceptance_criteria: optionalText('acceptance_criteria'),
  },
  { error: (issue) => (isMissing(issue.input) ? messages.summaryRequired : messages.taskNotObject) },
);

/**
 * The body of `POST /scribes/:scribe_id/requests`. Keys are declared in the documented
 * precedence order (docs/api.md) and zod reports issues in that order, so the first issue
 * is the answer.
 */
export const submitRequestBody = z.object(
  {
    actor_kind: z.literal('task', { error: messages.unsupportedActorKind }).nullish(),
    task: taskInput,
  },
  { error: messages.bodyNotObject },
);

export type SubmitRequestBody = z.infer<typeof submitRequestBody>;
export type TaskInput = SubmitRequestBody['task'];
export type AttachmentInput = z.infer<typeof attachmentInput>;

/** Validates a submit body, or throws the first rule it breaks as a 422. */
export function parseSubmitRequestBody(body: unknown): SubmitRequestBody {
  const parsed = submitRequestBody.safeParse(body);
  if (!parsed.success) throw new ValidationError(parsed.error.issues[0]!.message);
  return parsed.data;
}

export const listRequestsQuery = z.object({
  status: z.enum(REQUEST_STATUSES, { error: messages.invalidStatus }).optional(),
  entity_type: z.enum(ENTITY_TYPES, { error: messages.invalidEntityType }).optional(),
});

export function parseListRequestsQuery(query: unknown): z.infer<typeof listRequestsQuery> {
  const parsed = listRequestsQuery.safeParse(query);
  if (!parsed.success) throw new BadRequestError(parsed.error.issues[0]!.message);
  return parsed.data;
}
