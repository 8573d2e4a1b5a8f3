import { z } from 'zod';
import { ValidationError } from '../http/errors.js';
import { messages as requestMessages, withoutNul } from '../requests/schemas.js';

export const messages = {
  messageNotString: 'message must be a string',
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
