import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { markedBlocks } from '../helpers/docs.js';
import { tempDir } from '../helpers/harness.js';
import { runCommandToExit, startCommand, stopGroup } from '../helpers/process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DEPLOY = path.join(ROOT, 'docs/deploy.md');

/** The npm commands of deploy.md's install block, without the `sudo -u scribe` before them. */
function installCommands(): string[] {
  const [block] = markedBlocks(DEPLOY, 'install-commands');
  return [...block!.matchAll(/^sudo -u scribe (npm [^#\n]*?)\s*(?:#.*)?$/gm)].map((m) => m[1]!);
}

/**
 * A folder holding the prebuilt better-sqlite3 binary its install would download, packed
 * from the suite's own, so the test reaches neither GitHub nor a compiler (a minute or two).
 */
function localPrebuilds(dir: string): string {
  const manifest = createRequire(import.meta.url).resolve('better-sqlite3/package.json');
  const { version } = JSON.parse(fs.readFileSync(manifest, 'utf8')) as { version: string };
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  fs.mkdirSync(dir);
  execFileSync('tar', ['-czf', path.join(dir, name), '-C', path.dirname(manifest), 'build/Release/better_sqlite3.node']);
  return dir;
}

// About npm, dist/ and the start, not the data: the server it starts is on SQLite in either
// run, and npm test runs this file in one run only (run-suites.ts, ONE_RUN_ONLY).
describe('a production install as docs/deploy.md writes it', function () {
  this.timeout(300_000);

  it('installs a clean clone with the npm commands of deploy.md, without the build tools in the end, starts with npm start and answers /healthz; after a source change npm start refuses to run old code', async () => {
    const dir = tempDir('scribe-install-');
    try {
      const app = path.join(dir, 'app');
      // The committed tree, as an operator's clone gets it (dist/ and node_modules are not in git).
      execFileSync('git', ['clone', '--quiet', ROOT, app]);
      const env = {
        HOME: process.env.HOME ?? '',
        // Packages come from npm's cache; only ones missing there from the registry.
        npm_config_prefer_offline: 'true',
        npm_config_audit: 'false',
        npm_config_fund: 'false',
        npm_config_better_sqlite3_local_prebuilds: localPrebuilds(path.join(dir, 'prebuilds')),
      };

      const commands = installCommands();
      expect(commands).to.deep.equal(['npm ci', 'npm prune --omit=dev']);
      for (const command of commands) {
        const { code, output } = await runCommandToExit('bash', ['-c', command], { cwd: app, env });
        expect(code, `${command}:\n${output}`).to.equal(0);
        // No install script left to review, and none that reports the install.
        expect(output, command).not.to.match(/install-scripts|scarf/i);
      }
      expect(fs.existsSync(path.join(app, 'node_modules/esbuild')), 'esbuild is pruned').to.equal(false);
      expect(fs.existsSync(path.join(app, 'dist/main.js')), 'dist/ is built').to.equal(true);

      const serverEnv = { ...env, HOST: '127.0.0.1', PORT: '0', DATA_DIR: path.join(dir, 'data') };
      const server = await startCommand('npm', ['start'], { cwd: app, env: serverEnv }, 60_000);
      try {
        const health = await fetch(`${server.url}/healthz`);
        expect(health.status).to.equal(200);
        expect(await health.json()).to.deep.equal({ status: 'ok' });
      } finally {
        await stopGroup(server);
      }

      fs.appendFileSync(path.join(app, 'src/main.ts'), '// changed by a pull\n');
      const stale = await runCommandToExit('npm', ['start'], { cwd: app, env: serverEnv });
      expect(stale.code).to.equal(1);
      expect(stale.output).to.include(
        'Building dist/: the sources changed since the last build.\n' +
          'Cannot build dist/: esbuild (a development dependency) is not installed. ' +
          'Run `npm ci` to install everything and build, then `npm prune --omit=dev` to drop the build tools again.\n',
      );
      expect(stale.output).not.to.include('"msg":"listening"');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
