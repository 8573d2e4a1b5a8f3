import { expect } from 'chai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import type OpenAISdk from 'openai';
import { createCompletionAccumulator, readCompletionChunks } from '../../src/agents/completion-stream.js';
import { loadOpenAiSdk } from '../../src/agents/openai-sdk.js';

/** A chunk of completion `chatcmpl-1` with one choice's delta, or none (the usage chunk). */
function chunk(
  delta: ChatCompletionChunk.Choice.Delta | null,
  finish: ChatCompletionChunk.Choice['finish_reason'] = null,
  usage?: ChatCompletionChunk['usage'],
): ChatCompletionChunk {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 7,
    model: 'm',
    choices: delta ? [{ index: 0, delta, finish_reason: finish }] : [],
    ...(usage ? { usage } : {}),
  };
}

describe('a streamed completion put together (agents/completion-stream.ts)', () => {
  // The SDK as the agent loads it at its first model call (agents/openai-sdk.ts): the classes of the errors it throws.
  let OpenAI: typeof OpenAISdk;
  before(async () => {
    OpenAI = await loadOpenAiSdk();
  });

  it('joins the text of the pieces, with the finish and the usage of the last chunk', () => {
    const answer = createCompletionAccumulator();
    const added = [chunk({ role: 'assistant', content: '' }), chunk({ content: 'High water ' }), chunk({ content: 'at 06:12.' }), chunk({}, 'stop')].map((c) => answer.add(c));
    answer.add(chunk(null, null, { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 }));
    expect(added).to.deep.equal([
      { text: '', calling: false },
      { text: 'High water ', calling: false },
      { text: 'at 06:12.', calling: false },
      { text: '', calling: false },
    ]);
    expect(answer.completion()).to.deep.equal({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 7,
      model: 'm',
      choices: [{ index: 0, finish_reason: 'stop', logprobs: null, message: { role: 'assistant', content: 'High water at 06:12.', refusal: null } }],
      usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
    });
  });

  it('puts tool calls together from pieces that come interleaved by index, and says when calling began', () => {
    const answer = createCompletionAccumulator();
    const added = [
      chunk({ role: 'assistant', content: 'Let me look. ' }),
      chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'find_entries', arguments: '{"q":' } }] }),
      chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'list_entry_types', arguments: '' } }] }),
      chunk({
        tool_calls: [
          { index: 0, function: { arguments: '"tide"}' } },
          { index: 1, function: { arguments: '{}' } },
        ],
      }),
      chunk({}, 'tool_calls'),
    ].map((c) => answer.add(c));
    expect(added.map((a) => a.calling)).to.deep.equal([false, true, true, true, false]);
    expect(answer.completion().choices[0]!.message).to.deep.equal({
      role: 'assistant',
      content: 'Let me look. ',
      refusal: null,
      tool_calls: [
        { id: 'call_a', type: 'function', function: { name: 'find_entries', arguments: '{"q":"tide"}' } },
        { id: 'call_b', type: 'function', function: { name: 'list_entry_types', arguments: '{}' } },
      ],
    });
  });

  it('is no answer when the stream ends before its finish (cut short), or without a chunk', () => {
    const cut = createCompletionAccumulator();
    cut.add(chunk({ role: 'assistant', content: 'The answer begins' }));
    expect(() => cut.completion()).to.throw('missing finish_reason for choice 0');
    expect(() => createCompletionAccumulator().completion()).to.throw('stream ended without producing a ChatCompletion');
  });

  describe('an answer of server-sent events read (readCompletionChunks)', () => {
    const headers = new Headers({ 'x-request-id': 'req-7' });
    /** An answer whose body comes in these pieces of bytes. */
    const answer = (...pieces: Array<string | Uint8Array>) => ({
      headers,
      body: (async function* () {
        for (const piece of pieces) yield typeof piece === 'string' ? new TextEncoder().encode(piece) : piece;
      })(),
    });
    const read = async (...pieces: Array<string | Uint8Array>) => {
      const chunks: ChatCompletionChunk[] = [];
      await readCompletionChunks(answer(...pieces), (c) => chunks.push(c));
      return chunks;
    };
    const event = (c: ChatCompletionChunk) => `data: ${JSON.stringify(c)}\n\n`;

    it('hands over each chunk as it comes, whatever the pieces the bytes come in, and none after [DONE]', async () => {
      const first = chunk({ role: 'assistant', content: 'Tide: ' });
      const second = chunk({ content: 'high at 06:12 — 4.2 m' }, 'stop');
      const bytes = new TextEncoder().encode(
        `: a comment\n${event(first)}event: chunk\r\n${event(second).replace('\n\n', '\r\n\r\n')}data: [DONE]\n\n${event(chunk({ content: 'after' }))}`,
      );
      // Cut inside the em dash's three bytes, inside a field name and between the two newlines.
      const dash = bytes.indexOf(0xe2);
      const cuts = [3, 20, dash + 1, dash + 2, bytes.length - 40];
      const pieces = [0, ...cuts].map((at, i) => bytes.subarray(at, [...cuts, bytes.length][i]));
      expect(await read(...pieces)).to.deep.equal([first, second]);
    });

    it('drops an event the answer ends in the middle of', async () => {
      const whole = chunk({ role: 'assistant', content: 'The answer begins' });
      expect(await read(event(whole), `data: ${JSON.stringify(chunk({ content: ' and is cut' }))}\n`)).to.deep.equal([whole]);
    });

    it("fails with the SDK's APIError when an event carries an error, after handing over what came before it", async () => {
      const before = chunk({ role: 'assistant', content: 'Partly' });
      const chunks: ChatCompletionChunk[] = [];
      const failed = await readCompletionChunks(answer(event(before), 'data: {"error":{"message":"the model is overloaded","type":"server_error"}}\n\n'), (c) =>
        chunks.push(c),
      ).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(chunks).to.deep.equal([before]);
      expect(failed).to.be.instanceOf(OpenAI.APIError);
      expect((failed as InstanceType<typeof OpenAI.APIError>).status).to.equal(undefined);
      expect((failed as Error).message).to.equal('the model is overloaded');
      expect((failed as InstanceType<typeof OpenAI.APIError>).headers?.get('x-request-id')).to.equal('req-7');
    });

    it('fails on data that is not JSON, and on an answer without a body', async () => {
      let failed: unknown = await read('data: {"id": cut\n\n').catch((err: unknown) => err);
      expect(failed).to.be.instanceOf(SyntaxError);
      failed = await readCompletionChunks({ headers, body: null }, () => {}).catch((err: unknown) => err);
      expect(failed).to.be.instanceOf(OpenAI.OpenAIError);
      expect((failed as Error).message).to.equal('Attempted to iterate over a response with no body');
    });
  });
});
