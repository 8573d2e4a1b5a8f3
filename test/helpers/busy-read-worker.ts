import readPage from '../../src/entries/read-worker.js';
import type { EntryTypeWithFields } from '../../src/entries/entry-type-service.js';
import type { ListOptions } from '../../src/entries/page-reader.js';

/**
 * The read worker, except that a search `busy:<ms>` first holds its thread that long, as a
 * statement that never looks at its deadline would (a loop that only terminating the
 * thread stops), then reads the page as if `q` were empty.
 */
export default async function busyReadPage(task: { type: EntryTypeWithFields; options: ListOptions }) {
  const busy = /^busy:(\d+)$/.exec(task.options.q ?? '');
  if (!busy) return readPage(task);
  const until = Date.now() + Number(busy[1]);
  while (Date.now() < until);
  return readPage({ ...task, options: { ...task.options, q: '' } });
}
