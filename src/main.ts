import cluster from 'node:cluster';
import { reportReady, superviseWorkers } from './cluster.js';
import { configOrExit, processLogger, startOrExit, stopOnSignals } from './process.js';

const config = configOrExit();
const logger = processLogger(config);
if (config.webConcurrency > 1 && cluster.isPrimary) {
  superviseWorkers(config.webConcurrency, logger);
} else {
  const stopsOnSignals = stopOnSignals(logger);
  stopsOnSignals(await startOrExit(config, logger));
  reportReady();
}
