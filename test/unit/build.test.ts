import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * A project of its own in a temporary folder, built by a copy of src/build.mjs with this
 * install's esbuild, so the repository's own dist/ (which other suites run from) is untouched.
 */
function project() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribe-build-'));
  const write = (file: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  };
  fs.mkdirSync(path.join(dir, 'src'));
  fs.copyFileSync(path.join(root, 'src/build.mjs'), path.join(dir, 'src/build.mjs'));
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'));
  write(
    'tsconfig.json',
    JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', rootDir: '.', outDir: 'dist', sourceMap: true, types: [] } }),
  );
  // The entry points build.mjs bundles, each importing one shared module.
  write('src/shared.ts', "export const shared = (name: string) => name + ' started';\n");
  for (const entry of ['main', 'demo', 'cli/admin', 'entries/read-worker']) {
    write(`src/${entry}.ts`, `import { shared } from '${'../'.repeat(entry.split('/').length - 1) || './'}shared.js';\nconsole.log(shared('${entry}'));\n`);
  }
  const build = (...args: string[]) => spawnSync(process.execPath, ['src/build.mjs', ...args], { cwd: dir, encoding: 'utf8' });
  const built = () =>
    fs
      .readdirSync(path.join(dir, 'dist'), { recursive: true, encoding: 'utf8' })
      .filter((file) => !file.startsWith('.') && fs.statSync(path.join(dir, 'dist', file)).isFile())
      .sort();
  return { dir, write, build, built, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

describe('src/build.mjs', function () {
  this.timeout(60_000);

  it('removes from dist/ what it compiled of a source that is gone, so a migration removed does not run from dist/', () => {
    const p = project();
    try {
      p.write('migrations/20260101000100_kept.ts', 'export const up = 1;\n');
      p.write('migrations/20260101000200_dropped.ts', 'export const up = 2;\n');
      expect(p.build().status).to.equal(0);
      const migrations = () => p.built().filter((file) => file.startsWith('migrations/'));
      expect(migrations()).to.deep.equal([
        'migrations/20260101000100_kept.js',
        'migrations/20260101000100_kept.js.map',
        'migrations/20260101000200_dropped.js',
        'migrations/20260101000200_dropped.js.map',
      ]);

      fs.rmSync(path.join(p.dir, 'migrations/20260101000200_dropped.ts'));
      const again = p.build('--if-stale');
      expect([again.status, again.stderr.trim()]).to.deep.equal([0, 'Building dist/: the sources changed since the last build.']);
      expect(migrations()).to.deep.equal(['migrations/20260101000100_kept.js', 'migrations/20260101000100_kept.js.map']);
    } finally {
      p.remove();
    }
  });

  it('bundles each entry point into dist/<name>.js, the code they share into dist/chunks/, and the bundles run without the compiled files beside them', () => {
    const p = project();
    try {
      expect(p.build().status).to.equal(0);
      const bundles = p.built().filter((file) => !file.startsWith('src/') && !file.startsWith('migrations/'));
      expect(bundles.map((file) => file.replace(/chunk-\w+/, 'chunk-*'))).to.deep.equal([
        'admin.js',
        'admin.js.map',
        'chunks/chunk-*.js',
        'chunks/chunk-*.js.map',
        'demo.js',
        'demo.js.map',
        'main.js',
        'main.js.map',
        'read-worker.js',
        'read-worker.js.map',
      ]);
      fs.rmSync(path.join(p.dir, 'dist/src'), { recursive: true });
      const runs = ['main', 'demo', 'admin', 'read-worker'].map((name) => spawnSync(process.execPath, [`dist/${name}.js`], { cwd: p.dir, encoding: 'utf8' }));
      expect(runs.map((run) => [run.status, run.stdout])).to.deep.equal([
        [0, 'main started\n'],
        [0, 'demo started\n'],
        [0, 'cli/admin started\n'],
        [0, 'entries/read-worker started\n'],
      ]);
    } finally {
      p.remove();
    }
  });

  it('fails on a source that does not compile, naming it, and leaves no stamp: the next start builds again', () => {
    const p = project();
    try {
      p.write('src/broken.ts', 'export const x = ;\n');
      const failed = p.build();
      expect(failed.status).to.equal(1);
      expect(failed.stderr).to.include('src/broken.ts:1:');
      expect(fs.existsSync(path.join(p.dir, 'dist/.sources-sha256'))).to.equal(false);

      p.write('src/broken.ts', 'export const x = 1;\n');
      const again = p.build('--if-stale');
      expect([again.status, again.stderr.trim()]).to.deep.equal([0, 'Building dist/: the sources changed since the last build.']);
      expect(fs.readFileSync(path.join(p.dir, 'dist/src/broken.js'), 'utf8')).to.include('const x = 1;');
    } finally {
      p.remove();
    }
  });
});
