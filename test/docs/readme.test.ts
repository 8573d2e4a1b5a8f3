import fs from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { tempDir } from '../helpers/harness.js';
import { installEnv } from '../helpers/databases.js';
import { startProcess } from '../helpers/process.js';

const README = fileURLToPath(new URL('../../README.md', import.meta.url));
const ADMIN = fileURLToPath(new URL('../../src/cli/admin.ts', import.meta.url));

/** The shell blocks of the README's "Trying the API" section, as written. */
function exampleBlocks(): string[] {
  const text = fs.readFileSync(README, 'utf8');
  const start = text.indexOf('<!-- readme-examples');
  const end = text.indexOf('\n## ', start);
  expect(start, 'README marks its examples').to.be.greaterThan(-1);
  return [...text.slice(start, end).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

describe('the README', function () {
  this.timeout(60_000);

  it('has curl examples that answer as their comments say, against the demo', async () => {
    const script = exampleBlocks().join('\n');
    const expected = [...script.matchAll(/^#.*→ (\d{3})/gm)].map((m) => m[1]);
    const calls = script.split('\n').filter((line) => /(^|\$\()\s*curl /.test(line) || /^\S+=\$\(curl /.test(line));
    expect(expected.length, 'one status per curl call').to.equal(calls.length);

    const dataDir = tempDir();
    const install = await installEnv(dataDir);
    const demo = await startProcess('src/demo.ts', { ...install });
    const statusFile = path.join(dataDir, 'statuses');
    try {
      // Records each call's status, passes its body on unchanged (also into pipes and $(...)).
      const wrapper = [
        'set -euo pipefail',
        // `npm run --silent admin -- …` runs the CLI from source, on the demo's data.
        `npm() { shift 4; node --import tsx "$ADMIN" "$@"; }`,
        `curl() { local out; out=$(command curl -w '\\n%{http_code}' "$@"); printf '%s\\n' "\${out##*$'\\n'}" >> "$STATUS_FILE"; printf '%s' "\${out%$'\\n'*}"; }`,
      ].join('\n');
      const body = script.replace(/^export SCRIBE=.*$/m, '');
      const output = await new Promise<string>((resolve, reject) => {
        execFile('bash', ['-c', `${wrapper}\n${body}`], { env: { ...process.env, SCRIBE: demo.url, STATUS_FILE: statusFile, ADMIN, ...install } }, (err, stdout, stderr) =>
          err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
        );
      });
      const statuses = fs.readFileSync(statusFile, 'utf8').trim().split('\n');
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
    } finally {
      demo.child.kill('SIGTERM');
      await demo.exited;
    }
  });
});
