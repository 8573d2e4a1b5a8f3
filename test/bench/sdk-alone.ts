/**
 * The floor under the agent bench's rows: its model calls made by the OpenAI SDK alone, over
 * the product's lean fetch (net/lean-fetch.ts), streamed and read to the end as the openai
 * agent reads them (agents/completion-stream.ts), with nothing claimed, traced or recorded. Run as a process of its own by agents.ts: MODEL_URL, CALLS
 * and AT_ONCE in its environment; prints the drain's seconds and its CPU milliseconds as JSON.
 */
import OpenAI from 'openai';
import { Agent } from 'undici';
import { readCompletionChunks } from '../../src/agents/completion-stream.js';
import { type FetchAnswer, leanFetch } from '../../src/net/lean-fetch.js';

const calls = Number(process.env.CALLS);
const atOnce = Number(process.env.AT_ONCE);
const fetch = leanFetch(new Agent());
const client = new OpenAI({ apiKey: 'bench', baseURL: process.env.MODEL_URL, fetch: fetch as unknown as typeof globalThis.fetch, maxRetries: 0 });

let made = 0;
async function call(): Promise<void> {
  const answer = (await client.chat.completions
    .create({
      model: 'bench-model',
      messages: [{ role: 'user', content: `Task ${++made}: handle it.` }],
      stream: true,
      stream_options: { include_usage: true },
    })
    .asResponse()) as unknown as FetchAnswer;
  let reply = '';
  await readCompletionChunks(answer, (chunk) => (reply += chunk.choices[0]?.delta?.content ?? ''));
  if (!reply) throw new Error('an empty reply');
}

const cpuBefore = process.cpuUsage();
const started = performance.now();
await Promise.all(
  Array.from({ length: atOnce }, async () => {
    while (made < calls) await call();
  }),
);
const cpu = process.cpuUsage(cpuBefore);
console.log(JSON.stringify({ seconds: (performance.now() - started) / 1000, cpuMs: (cpu.user + cpu.system) / 1000 }));
await fetch.close();
