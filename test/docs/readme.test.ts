import fs from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { eventually, tempDir } from '../helpers/harness.js';
import { installEnv, openInstall } from '../helpers/databases.js';
import { markedBlocks } from '../helpers/docs.js';
import { builtEntry, startProcess, type ServerProcess } from '../helpers/process.js';

const README = fileURLToPath(new URL('../../README.md', import.meta.url));
// What `npm run admin` runs once dist/ is built (the suite builds it first).
const ADMIN = builtEntry('src/cli/admin.ts');

/** The shell blocks after the README's `<!-- marker` comment, up to its section's end, as written. */
const exampleBlocks = (marker: string): string[] => markedBlocks(README, marker);

/** The statuses the script's comments expect ("→ 202"), one per curl call. */
function expectedStatuses(script: string): string[] {
  const expected = [...script.matchAll(/^#.*→ (\d{3})/gm)].map((m) => m[1]!);
  const calls = script.split('\n').filter((line) => /(^|\$\()\s*curl /.test(line) || /^\S+=\$\(curl /.test(line));
  expect(expected.length, 'one status per curl call').to.equal(calls.length);
  return expected;
}

/**
 * Runs `script` in bash against a running demo, as a reader would paste it. Each curl call's
 * status is recorded (its body passes on unchanged, also into pipes and $(...)), and
 * `npm run --silent admin -- …` runs the built CLI, as npm would, on the demo's data.
 */
async function runAgainstDemo(script: string, env: Record<string, string>): Promise<{ output: string; statuses: string[] }> {
  const statusFile = path.join(tempDir(), 'statuses');
  const wrapper = [
    'set -euo pipefail',
    `npm() { shift 4; node "$ADMIN" "$@"; }`,
    `curl() { local out; out=$(command curl -w '\\n%{http_code}' "$@"); printf '%s\\n' "\${out##*$'\\n'}" >> "$STATUS_FILE"; printf '%s' "\${out%$'\\n'*}"; }`,
  ].join('\n');
  const output = await new Promise<string>((resolve, reject) => {
    execFile('bash', ['-c', `${wrapper}\n${script}`], { env: { ...process.env, STATUS_FILE: statusFile, ADMIN, ...env } }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
    );
  });
  return { output, statuses: fs.readFileSync(statusFile, 'utf8').trim().split('\n') };
}

describe('the README', function () {
  this.timeout(60_000);
  // One demo for both examples, as a reader would try them: its start and seed were most of
  // each example's time.
  let dataDir: string;
  let install: Record<string, string>;
  let demo: ServerProcess;

  before(async () => {
    dataDir = tempDir();
    install = await installEnv(dataDir);
    demo = await startProcess('src/demo.ts', { ...install });
  });

  after(async () => {
    demo?.child.kill('SIGTERM');
    await demo?.exited;
  });

  it('has curl examples that answer as their comments say, against the demo', async () => {
    const script = exampleBlocks('readme-examples').join('\n');
    const expected = expectedStatuses(script);
    const { output, statuses } = await runAgainstDemo(script.replace(/^export SCRIBE=.*$/m, ''), { SCRIBE: demo.url, ...install });
    expect(statuses).to.deep.equal(expected);
    expect(output).to.include('"status":"fulfilled"');
    expect(output).to.include('{"error":"Scribe is not active"}');
    expect(output).to.include('{"error":"Attachment download failed: address not allowed"}');
    expect(output).to.include('"Name":"Ada Lovelace"');
    expect(output).to.include('"error":"Invalid search query: expected a term after \\"&&\\" at position 12"');
    expect(output).to.include('{"data":null,"meta":{},"error":"Unauthorized"}');
    // The chat session, as the admin CLI prints it: answered by the builtin agent.
    const session = JSON.parse(/\{"id":"[0-9a-f-]+","state":.*?"messages":\[.*?\]\}/.exec(output)![0]);
    expect(session.state).to.equal('waiting');
    expect(session.messages.map((m: { author: string }) => m.author)).to.deep.equal(['user', 'scribe']);
    expect(session.messages[1].text).to.match(/^Here is what I found for "acme":\n- Acme/);
    expect(output).to.include('{"error":"message must be a string"}');
    // The task read, then another cancelled over the API.
    expect(output).to.match(
      /\{"task":\{"id":"[0-9a-f-]+","scribe_id":"atlas","request_id":"req_\w+","status":"(open|in_progress|done)","title":"Draft a reply to the Acme escalation"/,
    );
    expect(output).to.match(/\{"task":\{"id":"[0-9a-f-]+","scribe_id":"atlas","request_id":"req_\w+","status":"cancelled","title":"Which customers should we call first\?"/);
    expect(output).to.include('{"error":"Task is already finished"}');
    // The conversation: a second turn answered, its stream, the reconnect, the cancel.
    const stream = output.slice(output.indexOf('id: 1\nevent: status'));
    expect(stream).to.match(/^id: 1\nevent: status\ndata: \{[^\n]*"status":"queued"/);
    // The first read from the start, the reconnect from after event 4: each in order, with nothing missed.
    const ids = [...stream.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    const again = ids.indexOf(5, 5);
    expect(ids.slice(0, again)).to.deep.equal(ids.slice(0, again).map((_, i) => i + 1));
    expect(ids.slice(again)).to.deep.equal(ids.slice(again).map((_, i) => i + 5));
    expect(output).to.match(/\{"session":\{[^\n]*"status":"cancelled"/);
    expect(output).to.include('{"error":"Session is closed"}');
  });

  it('has a signed webhook channel example that answers as its comments say, against the demo', async () => {
    const script = exampleBlocks('channel-example').join('\n');
    const expected = expectedStatuses(script);
    await eventually(async () => (demo.output().includes('Organization:') ? true : undefined));
    const orgId = /Organization:\s+(\S+)/.exec(demo.output())![1]!;
    const { output, statuses } = await runAgainstDemo(script, { SCRIBE: demo.url, ORG_ID: orgId, ...install });
    expect(statuses).to.deep.equal(expected);
    expect(output).to.include('{"error":"Invalid signature"}');
    const requestId = /\{"request_id":"(req_[^"]+)"\}/.exec(output)![1]!;
    // One receipt, from the channel, with the signed body's summary; the tampered body made nothing.
    const db = await openInstall(dataDir);
    try {
      const made = await db('requests').where({ origin_type: 'channel' }).select('id', 'summary');
      expect(made.map((r) => [r.id, r.summary])).to.deep.equal([[requestId, 'Call back Ms. Ito about invoice 1042']]);
    } finally {
      await db.destroy();
    }
  });
});
