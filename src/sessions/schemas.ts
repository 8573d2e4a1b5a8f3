import { z } from 'zod';
import { ValidationError } from '../http/errors.js';
import { messages as requestMessages, withoutNul } from '../requests/schemas.js';

export const messages = {
  messageNotString: 'message must be a string',
  inputNotString: 'input must be a string',
  endNotBoolean: 'end_session_immediately must be a boolean',
};

/** The body of `POST /scribes/:id/chat` (docs/api.md, Chat); null counts as omitted. */
export const chatBody = z.object(
  {
    message: z
      .string({ error: messages.messageNotString })
      .nullish()
      .refine(...withoutNul('message')),
    end_session_immediately: z.boolean({ error: messages.endNotBoolean }).nullish(),
  },
  { error: requestMessages.bodyNotObject },
);

export type ChatBody = z.infer<typeof chatBody>;

export function parseChatBody(body: unknown): ChatBody {
  const parsed = chatBody.safeParse(body);
  if (!parsed.success) throw new ValidationError(parsed.error.issues[0]!.message);
  return parsed.data;
}

/** One text field, which the service requires (`... is required` when missing or blank). */
const textBody = (field: 'message' | 'input', notString: string) =>
  z.object(
    {
      [field]: z
        .string({ error: notString })
        .nullish()
        .refine(...withoutNul(field)),
    },
    { error: requestMessages.bodyNotObject },
  );

/** The body of `POST /sessions/:id/messages`. */
export const messageBody = textBody('message', messages.messageNotString);
/** The body of `POST /tasks/:id/input`. */
export const inputBody = textBody('input', messages.inputNotString);

/** The text of a further message or an answer: '' when missing. */
export function parseTextBody(body: unknown, field: 'message' | 'input'): string {
  const parsed = (field === 'message' ? messageBody : inputBody).safeParse(body);
  if (!parsed.success) throw new ValidationError(parsed.error.issues[0]!.message);
  return (parsed.data[field] as string | null | undefined) ?? '';
}
