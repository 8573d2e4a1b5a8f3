import readPage, { type ReadTask } from '../../src/entries/read-worker.js';

/**
 * The read worker, except that a search `busy:<ms>` first holds its thread that long, then
 * reads the page as if `q` were empty. Given a budget (a search's first attempt, in the
 * threads pages share) it stops when the budget runs out, as a real statement would; in the
 * slow lane it ignores its deadline, like a statement that never checks: a loop that only
 * terminating the thread stops.
 */
export default async function busyReadPage(task: ReadTask) {
  const busy = /^busy:(\d+)$/.exec(task.options.q ?? '');
  if (!busy) return readPage(task);
  const until = Date.now() + Number(busy[1]);
  const budgetEnds = task.options.budgetMs === undefined ? Infinity : Date.now() + task.options.budgetMs;
  while (Date.now() < until) {
    if (Date.now() > budgetEnds) return { error: { status: 503, message: 'Search timed out' } };
  }
  return readPage({ ...task, options: { ...task.options, q: '' } });
}
