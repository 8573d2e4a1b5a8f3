// Compiles the TypeScript sources into dist/, bundles the entry points, and records what it built.
// Compiling strips the types with esbuild, file by file, as tsx does for the tests: the type
// check is `npm run typecheck` (tsc), which `npm test` runs, so a build does not pay for it again.
//
//   node src/build.mjs              compile and bundle (npm run build)
//   node src/build.mjs --if-stale   build only when the sources differ from the last
//                                       build's (npm start, npm run demo, npm run admin, npm ci)
//
// Plain JavaScript with no dependencies, so a production install without dev dependencies
// (no TypeScript, no esbuild) can still tell that its dist/ is current and start. Freshness is a hash of
// the sources' contents, not of their times: a checkout, a copy or a clock change that keeps
// the contents keeps the build, and any changed byte rebuilds. Everything it prints goes to
// stderr, so `npm run --silent admin` keeps one JSON object alone on stdout.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
/** What the compiled output depends on: the compiled folders, the compiler settings and the dependency tree. */
const INPUTS = ['src', 'migrations', 'seeds', 'tsconfig.json', 'package-lock.json'];
const STAMP = path.join(root, 'dist', '.sources-sha256');
/**
 * The processes' entry points, each bundled with the code it imports into dist/<name>.js
 * (shared code in dist/chunks/): a process then starts by reading a few large files rather
 * than some thousand small ones (lodash's alone, through knex, are 255), which took as much
 * CPU as everything else the start does.
 */
const ENTRY_POINTS = {
  main: 'dist/src/main.js',
  demo: 'dist/src/demo.js',
  admin: 'dist/src/cli/admin.js',
  'read-worker': 'dist/src/entries/read-worker.js',
};
/**
 * Packages the bundles load from node_modules as they are: native code and the database
 * drivers knex names but Scribe does not use; packages that start threads from files of their
 * own (piscina; pino, whose transport threads load pino-pretty by name) or load parts of
 * themselves by path (unpdf's PDF.js); and those loaded only at their first use, which a
 * bundle would not make cheaper.
 */
const EXTERNAL = [
  'better-sqlite3',
  'pg-native',
  'mysql',
  'mysql2',
  'mariadb',
  'oracledb',
  'tedious',
  'sqlite3',
  'pg-query-stream',
  'piscina',
  'pino',
  'unpdf',
  'openai',
  '@modelcontextprotocol/sdk',
];
/** A build that stopped half-way leaves no stamp, and one whose entry point is gone is no build. */
const ENTRY = path.join(root, 'dist', 'main.js');

const messages = {
  building: 'Building dist/: the sources changed since the last build.',
  noCompiler:
    'Cannot build dist/: esbuild (a development dependency) is not installed. ' +
    'Run `npm ci` to install everything and build, then `npm prune --omit=dev` to drop the build tools again.',
};

/** Every file under `relative` (a file or a folder), as sorted paths relative to the root. */
function filesUnder(relative) {
  const full = path.join(root, relative);
  if (!fs.existsSync(full)) return [];
  if (!fs.statSync(full).isDirectory()) return [relative];
  return fs
    .readdirSync(full, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap((entry) => filesUnder(path.posix.join(relative, entry.name)));
}

/** SHA-256 over each input file's path and contents. */
function sourcesHash() {
  const hash = createHash('sha256');
  for (const file of INPUTS.flatMap(filesUnder)) {
    const contents = fs.readFileSync(path.join(root, file));
    hash.update(`${file}\0${contents.length}\0`).update(contents);
  }
  return hash.digest('hex');
}

function isFresh(hash) {
  try {
    return fs.readFileSync(STAMP, 'utf8').trim() === hash && fs.existsSync(ENTRY);
  } catch {
    return false;
  }
}

/** A development dependency's module path, or undefined when it is not installed. */
function devDependency(specifier) {
  try {
    return createRequire(import.meta.url).resolve(specifier);
  } catch {
    return undefined;
  }
}

/** The folders compiled into dist/, each .ts file to a .js file beside its source map. */
const COMPILED = ['src', 'migrations', 'seeds'];

/**
 * Compiles COMPILED into dist/ as tsc would emit it (the server runs its migrations and seeds
 * from there, and the bundles are made from it), reading the compiler settings esbuild honours
 * (verbatimModuleSyntax, class fields) from tsconfig.json.
 */
async function compile(esbuild) {
  const sources = COMPILED.flatMap(filesUnder).filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'));
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: sources,
    outdir: 'dist',
    outbase: '.',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    tsconfig: 'tsconfig.json',
    logLevel: 'warning',
  });
}

/**
 * Bundles ENTRY_POINTS from the compiled output (the code the tests run, source maps carried through).
 * Bundled CommonJS packages call require() and read __dirname, which an ES module lacks: the
 * banner defines them, as Node does for a CommonJS file.
 */
async function bundle(esbuild) {
  fs.rmSync(path.join(root, 'dist', 'chunks'), { recursive: true, force: true });
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: ENTRY_POINTS,
    outdir: 'dist',
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: EXTERNAL.flatMap((name) => [name, `${name}/*`]),
    sourcemap: true,
    logLevel: 'warning',
    banner: {
      js: [
        "import { createRequire as __scribeCreateRequire } from 'node:module';",
        "import { dirname as __scribeDirname } from 'node:path';",
        "import { fileURLToPath as __scribeFileURLToPath } from 'node:url';",
        'const require = __scribeCreateRequire(import.meta.url);',
        'const __filename = __scribeFileURLToPath(import.meta.url);',
        'const __dirname = __scribeDirname(__filename);',
      ].join(' '),
    },
  });
}

/**
 * Removes what dist/ holds of sources that are gone: compiling never deletes an output, and the
 * server runs its migrations from dist/, so a migration removed or renamed (a checkout of an
 * older version, another branch) would otherwise still run.
 */
function pruneOrphans() {
  for (const file of COMPILED.flatMap((folder) => filesUnder(path.posix.join('dist', folder)))) {
    const source = file.replace(/^dist\//, '').replace(/\.js(\.map)?$/, '.ts');
    if (source.endsWith('.ts') && !fs.existsSync(path.join(root, source))) fs.rmSync(path.join(root, file), { force: true });
  }
}

/** Compiles and bundles; on success records `hash`, taken before compiling, so an edit made meanwhile rebuilds next time. */
async function build(hash) {
  const esbuildPath = devDependency('esbuild');
  if (!esbuildPath) {
    console.error(messages.noCompiler);
    return 1;
  }
  const esbuild = await import(pathToFileURL(esbuildPath).href);
  // The stamp goes first: a failed or interrupted build must not leave an old stamp claiming freshness.
  fs.rmSync(STAMP, { force: true });
  try {
    await compile(esbuild);
  } catch {
    // esbuild has printed the errors (logLevel 'warning').
    return 1;
  }
  pruneOrphans();
  await bundle(esbuild);
  const temporary = `${STAMP}.${process.pid}`;
  fs.writeFileSync(temporary, `${hash}\n`);
  fs.renameSync(temporary, STAMP);
  return 0;
}

const ifStale = process.argv.includes('--if-stale');
const hash = sourcesHash();
if (ifStale && isFresh(hash)) process.exit(0);
if (ifStale) console.error(messages.building);
process.exit(await build(hash));
