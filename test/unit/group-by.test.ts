import { expect } from 'chai';
import { groupBy } from '../../src/lib/group-by.js';

describe('groupBy (lib/group-by.ts)', () => {
  const rows = [
    { task: 'b', n: 1 },
    { task: 'a', n: 2 },
    { task: 'b', n: 3 },
  ];

  it('groups items by key, each group in the items order, groups in the order their keys first came', () => {
    expect([...groupBy(rows, (row) => row.task)]).to.deep.equal([
      ['b', [rows[0], rows[2]]],
      ['a', [rows[1]]],
    ]);
  });

  it('gives each key asked for a group, empty when no item has it', () => {
    expect([...groupBy(rows, (row) => row.task, ['a', 'c', 'b'])]).to.deep.equal([
      ['a', [rows[1]]],
      ['c', []],
      ['b', [rows[0], rows[2]]],
    ]);
  });
});
