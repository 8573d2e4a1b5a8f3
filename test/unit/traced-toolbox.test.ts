import { expect } from 'chai';
import { type TracedCall, tracedToolbox } from '../../src/agents/trace.js';
import type { Toolbox } from '../../src/agents/toolbox.js';

describe('tracedToolbox (the builtin agent’s calls)', () => {
  it('lets I/O already waiting in before each call, then traces the call with its result or its error', async () => {
    const order: string[] = [];
    const calls: TracedCall[] = [];
    const tools = {
      entryTypes: async () => {
        order.push('entryTypes');
        return [{ name: 'Contacts' }];
      },
      searchEntries: async () => {
        order.push('searchEntries');
        throw new Error('bad query');
      },
    } as unknown as Toolbox;
    const traced = tracedToolbox(tools, { record: (call) => void calls.push(call), stored: async () => {} });
    // Stands for a request that arrived while the agent worked: it is served before the call.
    setImmediate(() => order.push('request'));
    const types = await traced.entryTypes();
    const failed = await traced.searchEntries({ q: 'x' }).catch((err: Error) => err.message);
    expect(order).to.deep.equal(['request', 'entryTypes', 'searchEntries']);
    expect(types).to.deep.equal([{ name: 'Contacts' }]);
    expect(failed).to.equal('bad query');
    expect(calls.map((c) => [c.kind, c.name, c.error ?? null])).to.deep.equal([
      ['tool', 'list_entry_types', null],
      ['tool', 'search_entries', 'bad query'],
    ]);
    expect(calls[0]!.result).to.deep.equal([{ name: 'Contacts' }]);
  });
});
