import { expect } from 'chai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { createCompletionAccumulator } from '../../src/agents/completion-stream.js';

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
});
