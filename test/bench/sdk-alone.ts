/**
 * The floor under the agent bench's rows: its model calls made by the OpenAI SDK alone, over
 * the product's lean fetch (net/lean-fetch.ts), streamed and read to the end as the openai
 * agent reads them (agents/completion-stream.ts), with nothing claimed, traced or recorded.
 * Run as a process of its own by agents.ts: MODEL_URL, WARM_UP, SETTLE, CALLS and AT_ONCE in
 * its environment; makes WARM_UP calls, SETTLE more, then CALLS, and prints as JSON the last
 * drain's seconds, and the CPU milliseconds of the first drain and of the last.
 */
import OpenAI from 'openai';
import { Agent } from 'undici';
import { readCompletionChunks } from '../../src/agents/completion-stream.js';
import { type FetchAnswer, leanFetch } from '../../src/net/lean-fetch.js';

const calls = Number(process.env.CALLS);
const warmUp = Number(process.env.WARM_UP);
const settle = Number(process.env.SETTLE ?? 0);
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

/** Makes `n` calls, `atOnce` at a time; its CPU milliseconds. */
async function drain(n: number): Promise<number> {
  const cpuBefore = process.cpuUsage();
  made = 0;
  await Promise.all(
    Array.from({ length: atOnce }, async () => {
      while (made < n) await call();
    }),
  );
  const cpu = process.cpuUsage(cpuBefore);
  return (cpu.user + cpu.system) / 1000;
}

// Cold: the first calls of a fresh process, as the workers' first tasks are (agents.ts).
const coldCpuMs = await drain(warmUp);
await drain(settle);
const started = performance.now();
const cpuMs = await drain(calls);
console.log(JSON.stringify({ seconds: (performance.now() - started) / 1000, cpuMs, coldCpuMs }));
await fetch.close();
