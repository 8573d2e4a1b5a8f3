/**
 * The second reference under the agent bench's rows: its model calls made by the openai agent
 * alone (agents/openai.ts), built as the workers build it, working the tasks the bench's
 * receipts make, with nothing claimed or recorded: the SDK with the request the product sends
 * (system prompt, task and tool definitions), the endpoint's gate, the stream read and put
 * together. The rows over this are what claiming, recording and telling of the work adds. A
 * process of its own (alone.ts), run by agents.ts.
 */
import { randomBytes } from 'node:crypto';
import { Agent } from 'undici';
import { createOpenAiAgent } from '../../src/agents/openai.js';
import { noTrace } from '../../src/agents/trace.js';
import type { Toolbox } from '../../src/agents/toolbox.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { followingRedirects, leanFetch } from '../../src/net/lean-fetch.js';
import { createSecretBox } from '../../src/secrets/secret-box.js';
import type { WorkedTaskRow } from '../../src/tasks/queries.js';
import { measureAlone, modelUrl } from './alone.js';

const config = loadConfig({ OPENAI_BASE_URL: modelUrl, OPENAI_API_KEY: 'bench', OPENAI_MODEL: 'bench-model' });
const fetch = leanFetch(new Agent(), followingRedirects());
const agent = createOpenAiAgent(config.openai, createLogger('silent'), { endpointFetch: fetch, scribeEndpointFetch: fetch, secrets: createSecretBox(randomBytes(32)) });
// A scribe as the bench makes them (agents.ts), and a task as its receipts make them (api.ts, insertAccepted).
const scribe = { id: 'bench-scribe', organization_id: 'bench-org', slug: 's01', name: 's1', instructions: '' };
const at = new Date().toISOString();
// The bench's model answers in text: the agent never calls a tool.
const tools = {} as Toolbox;

await measureAlone(async (n) => {
  const task: WorkedTaskRow = {
    id: `task-${n}`,
    organization_id: scribe.organization_id,
    scribe_id: scribe.id,
    request_id: null,
    status: 'in_progress',
    title: `t${n}`,
    summary: `bulk ${n}`,
    acceptance_criteria: null,
    result: null,
    last_error: null,
    claim_token: null,
    lease_until: null,
    attempts: 1,
    created_at: at,
    updated_at: at,
  };
  const outcome = await agent.work({ scribe, task, history: [], attachments: [], tools, trace: noTrace, mcpServers: async () => [], signal: new AbortController().signal });
  if (outcome.status !== 'done') throw new Error(`the task ended ${outcome.status}`);
});
await fetch.close();
