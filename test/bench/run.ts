/**
 * `npm run bench [-- --only api|entries|console|scale|webhooks|agents|peer|streams] [--entries N]`: runs the scenarios and rewrites their
 * sections of docs/benchmarks.md. Everything runs on loopback, bounded in time.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { benchApi } from './api.js';
import { benchEntries } from './entries.js';
import { benchConsole } from './console.js';
import { benchScale } from './scale.js';
import { benchWebhooks } from './webhooks.js';
import { benchAgents } from './agents.js';
import { benchPeer } from './peer.js';
import { benchStreams } from './streams.js';

const { values } = parseArgs({ options: { only: { type: 'string' }, entries: { type: 'string', default: '100000' } } });
const temp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'scribe-bench-'));

for (const [name, run] of [
  ['api', (dir: string) => benchApi(dir)],
  ['entries', (dir: string) => benchEntries(dir, Number(values.entries))],
  ['console', (dir: string) => benchConsole(dir)],
  ['scale', (dir: string) => benchScale(dir, Number(values.entries))],
  ['webhooks', (dir: string) => benchWebhooks(dir)],
  ['agents', (dir: string) => benchAgents(dir)],
  ['peer', (dir: string) => benchPeer(dir)],
  ['streams', (dir: string) => benchStreams(dir)],
] as const) {
  if (values.only && values.only !== name) continue;
  const dir = temp();
  try {
    await run(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
