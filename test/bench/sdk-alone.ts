/**
 * The floor under the agent bench's rows: its model calls made by the OpenAI SDK alone, over
 * the product's lean fetch (net/lean-fetch.ts), streamed and read to the end as the openai
 * agent reads them (agents/completion-stream.ts), with nothing claimed, traced or recorded.
 * A process of its own (alone.ts), run by agents.ts.
 */
import { Agent } from 'undici';
import { readCompletionChunks } from '../../src/agents/completion-stream.js';
import { loadOpenAiSdk } from '../../src/agents/openai-sdk.js';
import { type FetchAnswer, leanFetch } from '../../src/net/lean-fetch.js';
import { measureAlone, modelUrl } from './alone.js';

const fetch = leanFetch(new Agent());
const OpenAI = await loadOpenAiSdk();
const client = new OpenAI({ apiKey: 'bench', baseURL: modelUrl, fetch: fetch as unknown as typeof globalThis.fetch, maxRetries: 0 });

await measureAlone(async (n) => {
  const answer = (await client.chat.completions
    .create({
      model: 'bench-model',
      messages: [{ role: 'user', content: `Task ${n}: handle it.` }],
      stream: true,
      stream_options: { include_usage: true },
    })
    .asResponse()) as unknown as FetchAnswer;
  let reply = '';
  await readCompletionChunks(answer, (chunk) => (reply += chunk.choices[0]?.delta?.content ?? ''));
  if (!reply) throw new Error('an empty reply');
});
await fetch.close();
