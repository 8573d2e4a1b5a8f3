import type { ScribeRow } from '../scribes/service.js';
import type { MessageRow } from '../sessions/service.js';
import type { TaskEventRow, WorkedTaskRow } from '../tasks/service.js';
import type { Toolbox } from './toolbox.js';
import type { Trace } from './trace.js';
import type { AgentAttachment } from './attachments.js';
import type { McpServerRow } from './queries.js';
import type { AnswerDraft } from './reply-writer.js';

/** What an agent sees of its scribe: who it is, and the openai agent's settings for it. */
export type AgentScribe = Pick<ScribeRow, 'id' | 'organization_id' | 'slug' | 'name' | 'instructions'> &
  Partial<Pick<ScribeRow, 'model' | 'model_base_url' | 'model_api_key' | 'model_vision' | 'max_tool_rounds' | 'token_budget'>>;

export interface AgentInput {
  scribe: AgentScribe;
  tools: Toolbox;
  /** Where the agent reports each model and tool call (agents/trace.ts). */
  trace: Trace;
  /** The scribe's MCP servers, whose tools the openai agent offers the model (agents/mcp.ts); read only when asked. */
  mcpServers: () => Promise<readonly McpServerRow[]>;
  /** Aborted when the process stops; the work is then released for the next start. */
  signal: AbortSignal;
  /** Where the agent may write its answer's text as it comes, readable before the answer is recorded; agents need not. */
  draft?: AnswerDraft;
}

/** The scribe's answer to a session's latest message; `end` completes the session. */
export interface SessionOutcome {
  reply: string;
  end?: boolean;
}

/** Where a task stands after the agent worked it. */
export type TaskOutcome = { status: 'done'; result: string } | { status: 'waiting'; question: string };

/**
 * An agent works for one scribe at a time: it answers a session's transcript and works a
 * task, acting on the organization's data only through the toolbox. Throwing records a
 * failure on the session or task (src/runtime).
 */
export interface Agent {
  answer(input: AgentInput & { transcript: readonly MessageRow[] }): Promise<SessionOutcome>;
  work(input: AgentInput & { task: WorkedTaskRow; history: readonly TaskEventRow[]; attachments: readonly AgentAttachment[] }): Promise<TaskOutcome>;
}

/** A failure worth showing as is on the session or task (the agent's own words, no stack). */
export class AgentError extends Error {
  override name = 'AgentError';
}
