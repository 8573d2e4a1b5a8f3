import { expect } from 'chai';
import { decodeCursor, encodeCursor } from '../../src/http/cursor.js';

const isReq = (id: string) => /^req_[0-9A-Z]{26}$/.test(id);

describe('cursors', () => {
  it('round-trip a position as an opaque base64url string', () => {
    const position = { createdAt: '2026-11-21T09:30:00.123Z', id: 'req_01JD0000000000000000000000' };
    const cursor = encodeCursor(position);
    expect(cursor).to.match(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(cursor, isReq)).to.deep.equal(position);
  });

  const bad: Array<[string, unknown]> = [
    ['a number', 5],
    ['an empty string', ''],
    ['non-base64url characters', 'a+b/c='],
    ['base64 of non-JSON', Buffer.from('hello').toString('base64url')],
    ['a JSON object', Buffer.from('{"t":1}').toString('base64url')],
    ['a one-item array', Buffer.from('["2026-11-21T09:30:00.123Z"]').toString('base64url')],
    ['a date without time', Buffer.from('["2026-11-21","req_01JD0000000000000000000000"]').toString('base64url')],
    ['an impossible date', Buffer.from('["2026-02-31T25:00:00.000Z","req_01JD0000000000000000000000"]').toString('base64url')],
    ['a day the month does not have (Date would roll it over)', Buffer.from('["2026-02-30T00:00:00.000Z","req_01JD0000000000000000000000"]').toString('base64url')],
    ['the 31st of April', Buffer.from('["2026-04-31T09:30:00.123Z","req_01JD0000000000000000000000"]').toString('base64url')],
    ['an id of the wrong form', Buffer.from('["2026-11-21T09:30:00.123Z","x; drop table"]').toString('base64url')],
    ['a very long string', 'A'.repeat(2000)],
  ];
  for (const [what, cursor] of bad) {
    it(`reject ${what} with 400 "Invalid cursor format"`, () => {
      expect(() => decodeCursor(cursor, isReq))
        .to.throw('Invalid cursor format')
        .with.property('status', 400);
    });
  }
});
