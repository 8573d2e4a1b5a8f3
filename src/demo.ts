import { openDatabase } from './db/knex.js';
import { createServices } from './services.js';
import { configOrExit, migrateOrExit, portsFreeOrExit, processLogger, secretBoxOrExit, startOrExit, stopOnSignals } from './process.js';
import { seed } from '../seeds/demo.js';

/** `npm run demo`: migrate, seed the demo data and its three days of history (once), start, and say how to get in. */
// Request logs (at info) would push the banner out of sight; LOG_LEVEL=info brings them back.
process.env.LOG_LEVEL ??= 'warn';
const config = configOrExit();
const logger = processLogger(config);

// Said before the seed's few seconds, not after them.
await portsFreeOrExit(config);
const secrets = secretBoxOrExit(config);
const db = openDatabase(config.databaseUrl, { poolSize: config.databasePoolSize });
await migrateOrExit(db, config, secrets);
// The history's failures are made on purpose: the queues would log each of them as an error.
const quiet = logger.child({}, { level: 'silent' });
const demo = await seed((options) => createServices({ config, db, logger: quiet, secrets, options }));
await db.destroy();

const stopsOnSignals = stopOnSignals(logger);
const server = await startOrExit(config, logger);
stopsOnSignals(server);

process.stdout.write(
  [
    '',
    `Scribe demo is running at ${server.url}`,
    '',
    `  API key:        ${demo.apiKey}`,
    `  Organization:   ${demo.organizationId}   (ORG_ID in the README's admin commands)`,
    `  Console login:  ${demo.email} / ${demo.password}`,
    '',
    'Try:',
    `  curl -s ${server.url}/api/v1/scribes/atlas/requests -H 'X-Api-Key: ${demo.apiKey}'`,
    '',
    'A webhook channel to atlas (no key; see docs/channels.md):',
    `  curl -s ${server.url}${demo.webhookPath} -H 'Content-Type: application/json' -d '{"summary": "Draft a reply to the pricing question"}'`,
    '',
    'Stop with Ctrl-C.',
    '',
  ].join('\n'),
);
