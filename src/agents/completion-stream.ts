import { createParser } from 'eventsource-parser';
import type { FetchAnswer } from '../net/lean-fetch.js';
import { openAiSdk } from './openai-sdk.js';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionMessageFunctionToolCall } from 'openai/resources/chat/completions';

/** What one chunk added: text of the answer, or the first sign that the model is calling tools. */
export interface ChunkAdded {
  text: string;
  calling: boolean;
}

/** A stream that ended before its answer did: no chunk, or no finish. */
export class UnfinishedAnswer extends Error {
  override name = 'UnfinishedAnswer';
}

/**
 * A streamed completion's chunks put together into the completion they make: the first
 * choice's text, its tool calls from their pieces, its finish, and the usage. The SDK's
 * `stream()` helper does this and more (every choice, logprobs, audio, parsed output, an
 * event per change), which costs a run more CPU than the rest of its model call; the
 * agent asks for one choice of text and tools. Its checks are kept: a stream that ends
 * without a finish (cut short) is no answer.
 */
export function createCompletionAccumulator() {
  let head: Pick<ChatCompletionChunk, 'id' | 'created' | 'model'> | undefined;
  let role: string | undefined;
  let content: string | null = null;
  let refusal: string | null = null;
  let finish: ChatCompletion.Choice['finish_reason'] | null = null;
  let usage: ChatCompletion['usage'];
  const calls: ChatCompletionMessageFunctionToolCall[] = [];

  return {
    add(chunk: ChatCompletionChunk): ChunkAdded {
      head ??= { id: chunk.id, created: chunk.created, model: chunk.model };
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices.find((c) => c.index === 0);
      if (!choice) return { text: '', calling: false };
      const { delta } = choice;
      if (choice.finish_reason) finish = choice.finish_reason;
      if (delta.role) role = delta.role;
      if (delta.refusal) refusal = (refusal ?? '') + delta.refusal;
      if (delta.content) content = (content ?? '') + delta.content;
      for (const piece of delta.tool_calls ?? []) {
        calls[piece.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
        const call = calls[piece.index]!;
        if (piece.id) call.id = piece.id;
        if (piece.function?.name) call.function.name = piece.function.name;
        if (piece.function?.arguments) call.function.arguments += piece.function.arguments;
      }
      return { text: delta.content ?? '', calling: Boolean(delta.tool_calls?.length) };
    },

    completion(): ChatCompletion {
      if (!head) throw new UnfinishedAnswer('stream ended without producing a ChatCompletion');
      if (!finish) throw new UnfinishedAnswer('missing finish_reason for choice 0');
      if (role !== 'assistant') throw new (openAiSdk().OpenAIError)('missing role for choice 0');
      const toolCalls = calls.filter(Boolean);
      return {
        ...head,
        object: 'chat.completion',
        choices: [
          {
            index: 0,
            finish_reason: finish,
            logprobs: null,
            message: { role: 'assistant', content, refusal, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) },
          },
        ],
        ...(usage ? { usage } : {}),
      };
    },
  };
}

/**
 * Reads a streamed completion's answer (server-sent events) to its end, handing each chunk to
 * `onChunk` as it comes, as the SDK's stream would yield it: `[DONE]` ends the chunks, an
 * event whose data carries `error` fails the read with the SDK's APIError, and an event left
 * unfinished at the end is dropped. The SDK's stream takes each chunk through two async
 * generators and a line decoder of its own: per call, more CPU than the parser and a callback.
 */
export async function readCompletionChunks(answer: Pick<FetchAnswer, 'body' | 'headers'>, onChunk: (chunk: ChatCompletionChunk) => void): Promise<void> {
  if (!answer.body) throw new (openAiSdk().OpenAIError)('Attempted to iterate over a response with no body');
  let done = false;
  const parser = createParser({
    onEvent({ data }) {
      if (done) return;
      if (data.startsWith('[DONE]')) {
        done = true;
        return;
      }
      const chunk = JSON.parse(data) as ChatCompletionChunk & { error?: object };
      if (chunk?.error) throw new (openAiSdk().APIError)(undefined, chunk.error, undefined, answer.headers);
      onChunk(chunk);
    },
  });
  const decoder = new TextDecoder();
  for await (const bytes of answer.body) parser.feed(decoder.decode(bytes, { stream: true }));
  parser.feed(decoder.decode());
}
