import { startServer } from './server.js';
import { configOrExit, processLogger, stopOnSignals } from './process.js';

const config = configOrExit();
const logger = processLogger(config);
const server = await startServer(config, logger);
stopOnSignals(server, logger);
