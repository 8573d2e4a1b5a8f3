import cluster, { type Worker } from 'node:cluster';
import type { Logger } from './logger.js';

/** What a server process sends the primary once it serves; one that exits before is not restarted. */
const READY_MESSAGE = 'scribe:ready';
/** Wait before replacing a process that died after it had started. */
const RESTART_DELAY_MS = 1000;

/**
 * WEB_CONCURRENCY=N: this (primary) process forks N server processes, which share the port
 * (Node's cluster module hands out connections) and the database, and replaces one that
 * dies. SIGTERM or SIGINT stops them all gracefully. A process that fails before it was
 * ready (a bad variable, a busy port) ends the whole group with its exit code, so a broken
 * start does not loop.
 */
export function superviseWorkers(count: number, logger: Logger): void {
  let stopping = false;
  let exitCode = 0;
  const ready = new WeakSet<Worker>();
  // Kept referenced: with every server process dead, they are all that keeps the primary
  // running until it starts the next (an exit 0 would leave systemd's Restart=on-failure idle).
  const restarts = new Set<NodeJS.Timeout>();

  const fork = () => {
    const worker = cluster.fork();
    worker.on('message', (message: unknown) => {
      if (message !== READY_MESSAGE) return;
      ready.add(worker);
      // From here a death is a crash to recover from, not a failed start: the journal says which.
      logger.info({ workerPid: worker.process.pid }, 'a server process is ready');
    });
    worker.on('exit', (code, signal) => {
      if (stopping) {
        if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(exitCode);
        return;
      }
      if (!ready.has(worker)) {
        logger.error({ workerPid: worker.process.pid, code, signal }, 'a server process failed to start; stopping');
        stop(code ?? 1);
        return;
      }
      logger.error({ workerPid: worker.process.pid, code, signal }, 'a server process died; starting another');
      const restart = setTimeout(() => {
        restarts.delete(restart);
        fork();
      }, RESTART_DELAY_MS);
      restarts.add(restart);
    });
  };

  const stop = (code = 0) => {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    for (const restart of restarts) clearTimeout(restart);
    restarts.clear();
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    if (workers.length === 0) process.exit(exitCode);
    for (const worker of workers) worker.process.kill('SIGTERM');
  };

  process.on('SIGTERM', () => stop());
  process.on('SIGINT', () => stop());
  for (let i = 0; i < count; i++) fork();
}

/** Tells the primary that this server process started (a no-op outside a cluster). */
export function reportReady(): void {
  if (cluster.isWorker) process.send?.(READY_MESSAGE);
}
