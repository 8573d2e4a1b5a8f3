import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { resolveSessionSecret } from '../../src/console/session-secret.js';
import { tempDir } from '../helpers/harness.js';

describe('resolveSessionSecret()', () => {
  it('uses SESSION_SECRET when it is set, and writes nothing', () => {
    const dir = tempDir();
    expect(resolveSessionSecret('a-configured-secret-value', dir)).to.equal('a-configured-secret-value');
    expect(fs.existsSync(path.join(dir, 'session-secret'))).to.equal(false);
  });

  it('otherwise generates one, keeps it readable by the owner only, and reuses it', () => {
    const dir = path.join(tempDir(), 'not-yet-made');
    const secret = resolveSessionSecret(undefined, dir);
    expect(secret).to.match(/^[A-Za-z0-9_-]{43}$/);
    const file = path.join(dir, 'session-secret');
    expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
    expect(resolveSessionSecret(undefined, dir)).to.equal(secret);
    expect(resolveSessionSecret(undefined, tempDir())).to.not.equal(secret);
  });
});

describe('keptInDataDir()', () => {
  it('gives processes that start at once the same secret, read whole, and leaves no draft behind', async () => {
    const dir = tempDir();
    const module = new URL('../../src/lib/data-dir-secret.ts', import.meta.url).href;
    const script = `const { keptInDataDir } = await import(${JSON.stringify(module)}); process.stdout.write(keptInDataDir(${JSON.stringify(dir)}, 'k', () => 'secret-of-' + process.pid));`;
    const outputs = await Promise.all(
      Array.from(
        { length: 6 },
        () =>
          new Promise<string>((resolve, reject) =>
            execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], (err, stdout) => (err ? reject(err) : resolve(stdout))),
          ),
      ),
    );
    expect(new Set(outputs).size, outputs.join(', ')).to.equal(1);
    expect(outputs[0]).to.match(/^secret-of-\d+$/);
    expect(fs.readdirSync(dir)).to.deep.equal(['k']);
  });
});
