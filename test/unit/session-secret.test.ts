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
