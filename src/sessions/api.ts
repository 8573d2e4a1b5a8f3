import type { Db } from '../db/knex.js';
import { usageOf } from '../agents/queries.js';
import type { MessageRow, SessionRow } from './queries.js';

/** A session as the API shows it (docs/api.md, Session object). */
export interface ApiSession {
  id: string;
  scribe_id: string;
  status: SessionRow['state'];
  messages: ApiMessage[];
  usage: { input_tokens: number; output_tokens: number };
  created_at: string;
  updated_at: string;
}

/** A message of a transcript; a reply the scribe is still writing is `partial`. */
export interface ApiMessage {
  id: number;
  author: 'user' | 'scribe' | 'staff';
  text: string;
  partial: boolean;
  created_at: string;
}

/** The transcript as clients see it: their messages, staff's and the scribe's; the system's notes (who cancelled, retried) stay in the console. */
export function presentMessages(messages: readonly MessageRow[]): ApiMessage[] {
  return messages.flatMap((m) => (m.author === 'system' ? [] : [{ id: Number(m.id), author: m.author, text: m.text, partial: Boolean(m.partial), created_at: m.created_at }]));
}

export async function presentSession(db: Db, session: SessionRow & { messages: readonly MessageRow[] }, scribeSlug: string): Promise<ApiSession> {
  const usage = await usageOf(db, { sessionIds: [session.id] });
  return {
    id: session.id,
    scribe_id: scribeSlug,
    status: session.state,
    messages: presentMessages(session.messages),
    usage: usage.get(session.id) ?? { input_tokens: 0, output_tokens: 0 },
    created_at: session.created_at,
    updated_at: session.updated_at,
  };
}
