import { expect } from 'chai';
import { filtersScope, pagerOf, serialCursor, timeAndIdCursor, totalText } from '../../src/console/pager.js';
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
    const page: KeysetPage<unknown> = { items: [], newer: ['2026-11-24T10:00:00.000Z', ID], older: ['2026-11-24T09:00:00.000Z', ID], atStart: false, total: { count: 60, more: false } };
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
