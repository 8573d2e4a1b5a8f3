import { expect } from 'chai';
import { TRAIL_MAX, filtersScope, pagerOf, serialCursor, timeAndIdCursor, totalText, trailPagerOf } from '../../src/console/pager.js';
import { UUID_PATTERN } from '../../src/lib/ids.js';
import type { KeysetPage } from '../../src/db/keyset.js';

const cursor = timeAndIdCursor((id) => UUID_PATTERN.test(id));
const ID = '01935f00-0000-7000-8000-000000000001';

describe('pager', () => {
  it('counts with what the count includes, capped', () => {
    expect(totalText({ count: 1, more: false }, ['receipt', 'receipts'], 'in all')).to.equal('1 receipt in all');
    expect(totalText({ count: 1234, more: false }, ['receipt', 'receipts'], 'matching these filters')).to.equal('1,234 receipts matching these filters');
    expect(totalText({ count: 10_000, more: true }, ['receipt', 'receipts'], 'matching these filters')).to.equal('more than 10,000 receipts matching these filters');
    expect(totalText({ count: 0, more: false }, ['fire', 'fires'], 'of this schedule')).to.equal('0 fires of this schedule');
  });

  it('says "matching these filters" only when a filter is set', () => {
    expect(filtersScope({ scribe: '', status: '' })).to.equal('in all');
    expect(filtersScope({ scribe: 'atlas', status: '' })).to.equal('matching these filters');
  });

  it('links first, previous (after=) and next (before=), keeping the filters', () => {
    const page: KeysetPage<unknown> = {
      items: [],
      newer: ['2026-11-24T10:00:00.000Z', ID],
      older: ['2026-11-24T09:00:00.000Z', ID],
      atStart: false,
      total: { count: 60, more: false },
    };
    const pager = pagerOf(page, { path: '/tasks', filters: { status: 'open', scribe: '' }, codec: cursor, noun: ['task', 'tasks'], scope: 'matching these filters' });
    expect(pager.order).to.equal('Newest first');
    expect(pager.total).to.equal('60 tasks matching these filters');
    expect(pager.firstHref).to.equal('/tasks?status=open');
    expect(pager.previousHref).to.equal(`/tasks?status=open&after=${cursor.encode(page.newer!)}`);
    expect(pager.nextHref).to.equal(`/tasks?status=open&before=${cursor.encode(page.older!)}`);
    expect(cursor.decode(cursor.encode(page.newer!))).to.deep.equal(page.newer);
  });

  it('links nowhere back on the first page, nowhere on from the last', () => {
    const page: KeysetPage<unknown> = { items: [], newer: null, older: null, atStart: true, total: null };
    expect(pagerOf(page, { path: '/audit', filters: {}, codec: serialCursor, noun: ['event', 'events'], scope: 'in all', order: 'Newest first' })).to.deep.equal({
      order: 'Newest first',
      total: null,
      firstHref: null,
      previousHref: null,
      nextHref: null,
    });
  });

  it('refuses a cursor its list could not have made with 400', () => {
    expect(() => serialCursor.decode('12a')).to.throw('Invalid cursor format');
    expect(() => cursor.decode('not-a-cursor')).to.throw('Invalid cursor format');
    expect(serialCursor.decode('42')).to.deep.equal([42]);
  });
});

describe('trailPagerOf() (a forward-only list: the entries list)', () => {
  const base = { path: '/entry-types/t', filters: { q: 'City:Zurich' }, order: 'Oldest first' };
  const query = (href: string | null) => Object.fromEntries(new URL(href!, 'http://x').searchParams);

  it('on the first page: Next carries no trail; no First or Previous', () => {
    const pager = trailPagerOf({ ...base, after: undefined, trail: undefined, next: 'c2' });
    expect(pager).to.include({ order: 'Oldest first', total: null, firstHref: null, previousHref: null });
    expect(query(pager.nextHref)).to.deep.equal({ q: 'City:Zurich', after: 'c2' });
  });

  it('walks forwards three pages and back the same way, to the first page', () => {
    const p2 = trailPagerOf({ ...base, after: 'c2', trail: undefined, next: 'c3' });
    expect(query(p2.nextHref)).to.deep.equal({ q: 'City:Zurich', after: 'c3', trail: 'c2' });
    const p3 = trailPagerOf({ ...base, ...query(p2.nextHref), next: 'c4' });
    expect(query(p3.nextHref)).to.deep.equal({ q: 'City:Zurich', after: 'c4', trail: 'c2~c3' });
    const p4 = trailPagerOf({ ...base, ...query(p3.nextHref), next: null });
    expect(p4.nextHref).to.equal(null);
    expect(query(p4.previousHref)).to.deep.equal({ q: 'City:Zurich', after: 'c3', trail: 'c2' });
    const back3 = trailPagerOf({ ...base, ...query(p4.previousHref), next: 'c4' });
    expect(query(back3.previousHref)).to.deep.equal({ q: 'City:Zurich', after: 'c2' });
    const back2 = trailPagerOf({ ...base, ...query(back3.previousHref), next: 'c3' });
    expect(query(back2.previousHref)).to.deep.equal({ q: 'City:Zurich' });
    expect(query(back2.firstHref)).to.deep.equal({ q: 'City:Zurich' });
  });

  it(`remembers at most ${TRAIL_MAX} pages back`, () => {
    const trail = Array.from({ length: TRAIL_MAX + 5 }, (_, i) => `c${i}`).join('~');
    const pager = trailPagerOf({ ...base, after: 'last', trail, next: 'more' });
    expect(query(pager.nextHref).trail!.split('~')).to.have.length(TRAIL_MAX);
  });
});
