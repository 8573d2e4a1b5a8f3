/**
 * The API with event streams open: GET task and GET session beside GET poll, the poll row
 * again while 2,000 event streams are open on the same process, and how long a delta takes
 * from being written to reaching a streaming client.
 */
import http from 'node:http';
import { openDatabase } from '../../src/db/knex.js';
import { provision } from '../helpers/provision.js';
import { percentiles, PRODUCTION_SETTINGS } from './api.js';
import { LOAD_LINE, load, machineLine, startServer, writeSection, type Row } from './lib.js';
import { startBenchModel } from './model.js';

const OPEN_STREAMS = 2000;
const DELTA_SAMPLES = 30;

/** Opens an event stream and calls `onEvent` with each event and when it arrived; resolves once the stream answered. */
function openStream(url: string, key: string, onEvent: (event: { id: number; event: string }, at: number) => void = () => {}): Promise<http.ClientRequest> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { 'x-api-key': key }, agent: false }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`stream answered ${res.statusCode}`));
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const at = Date.now();
        buffer += chunk;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const id = /^id: (\d+)$/m.exec(block);
          const event = /^event: (\w+)$/m.exec(block);
          if (id && event) onEvent({ id: Number(id[1]), event: event[1]! }, at);
        }
      });
      resolve(req);
    });
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
  });
}

export async function benchStreams(dataDir: string): Promise<void> {
  const model = await startBenchModel({ delayMs: 0, toolRounds: 0, chunkDelayMs: 120, chunks: 8 });
  const p = await provision(dataDir, 'bench', { kind: 'sqlite' });
  const { key, services, organizationId } = p;
  // Streams that stay open: sessions queued for a powered-off scribe.
  const idle = await services.scribes.create({ organizationId, slug: 'idle', name: 'idle', state: 'powered_off' });
  const waiting: string[] = [];
  for (let i = 0; i < OPEN_STREAMS; i++) waiting.push((await services.sessions.start(idle, { message: `held ${i}`, endImmediately: false })).id);
  await services.scribes.create({ organizationId, slug: 'streamer', name: 'streamer' });
  await services.scribes.setAgent(organizationId, 'streamer', { agent: 'openai' });
  const submitted = await services.requests.submit(p.scribe, { task: { summary: 'A task to read' } });
  await services.dispatcher.tick();
  const taskId = (await services.requests.get(organizationId, submitted.id)).entity_id!;
  const sessionId = waiting[0]!;
  await p.close();

  const env = { ...p.env, ...PRODUCTION_SETTINGS, OPENAI_BASE_URL: model.url, OPENAI_API_KEY: 'bench', OPENAI_MODEL: 'bench-model' };
  const server = await startServer(['dist/main.js'], env, '/healthz', { quiet: true });
  const headers = { 'x-api-key': key };
  const api = `${server.url}/api/v1`;
  const rows: Row[] = [];
  const streams: http.ClientRequest[] = [];
  let latency: ReturnType<typeof percentiles>;
  try {
    rows.push(await load('GET poll', { url: `${api}/requests/${submitted.id}`, headers }));
    rows.push(await load('GET task', { url: `${api}/tasks/${taskId}`, headers }));
    rows.push(await load('GET session', { url: `${api}/sessions/${sessionId}`, headers }));
    for (let i = 0; i < OPEN_STREAMS; i += 100) streams.push(...(await Promise.all(waiting.slice(i, i + 100).map((id) => openStream(`${api}/sessions/${id}/events`, key)))));
    console.log(`${streams.length} event streams open`);
    rows.push(await load(`GET poll, ${OPEN_STREAMS.toLocaleString('en')} event streams open`, { url: `${api}/requests/${submitted.id}`, headers }));
    latency = await deltaLatency(api, key, p.install.databaseUrl);
  } finally {
    streams.forEach((req) => req.destroy());
    await server.stop();
    await model.close();
  }
  const poll = rows[0]!.rps;
  const withStreams = rows.at(-1)!.rps;
  console.log(`delta written → received: p50 ${latency.p50} ms, p99 ${latency.p99} ms`);
  writeSection('streams', [
    '## Reads of tasks and sessions, and event streams',
    '',
    `One run: ${machineLine()}; ${LOAD_LINE}; one server process on SQLite with production settings.`,
    '',
    '| scenario | req/s | p50 ms | p99 ms | errors |',
    '|---|---:|---:|---:|---:|',
    ...rows.map((r) => `| ${r.name} | ${r.rps} | ${r.p50} | ${r.p99} | ${r.errors} |`),
    '',
    `With ${OPEN_STREAMS.toLocaleString('en')} event streams open on the process, the poll row ran at ${Math.round((withStreams / poll) * 100)} % of the poll row without them (target: within 10 %).`,
    `A delta reached a streaming client ${latency.p50} ms (p50) and ${latency.p99} ms (p99) after it was written (${latency.samples} deltas of replies a local model streamed in 8 pieces 120 ms apart, while the streams were open; target p50 ≤ 100 ms),`,
    "measured from the delta's `created_at` in the database to its arrival at the client, on one machine.",
  ]);
}

/** Chats with the streaming scribe and follows each session: the time from each delta's write to its arrival. */
async function deltaLatency(api: string, key: string, databaseUrl: string) {
  const db = openDatabase(databaseUrl);
  const delays: number[] = [];
  try {
    while (delays.length < DELTA_SAMPLES) {
      const res = await fetch(`${api}/scribes/streamer/chat`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'Stream me a reply' }),
      });
      const { session_id: id } = (await res.json()) as { session_id: string };
      const arrived = new Map<number, number>();
      let finished!: () => void;
      const done = new Promise<void>((resolve) => (finished = resolve));
      const req = await openStream(`${api}/sessions/${id}/events`, key, (event, at) => {
        if (event.event === 'delta') arrived.set(event.id, at);
        if (event.event === 'status' && arrived.size > 0) finished();
      });
      await done;
      req.destroy();
      const written = await db('stream_events').where({ subject_id: id, kind: 'delta' }).select('seq', 'created_at');
      for (const row of written) if (arrived.has(row.seq)) delays.push(arrived.get(row.seq)! - Date.parse(row.created_at));
    }
  } finally {
    await db.destroy();
  }
  return percentiles(delays.slice(0, DELTA_SAMPLES), DELTA_SAMPLES);
}
