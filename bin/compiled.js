// The fsjob CLI compiled once per source version, so that each `fsjob`
// process starts in a fraction of the time the TypeScript loader needs.
//
// Why: registering tsx and loading ~60 modules through its hooks costs every
// start 0.4 s of CPU on an idle 2-core machine and well over a second under
// load; a shell script that enqueues jobs, a test suite or the conformance
// suite starts thousands of `fsjob` processes. The bundle esbuild (the
// compiler tsx itself uses) makes of src/cli/main.ts loads in ~0.1 s.
//
// Nothing has to be built by hand: the first start after a source change
// builds the bundle into node_modules/.cache/fsjob-cli/<hash of the sources>/
// and later starts import it. Anything that goes wrong here (no esbuild, a
// read-only install, a full disk) returns undefined and bin/fsjob.js runs the
// sources through tsx as before; FSJOB_TSX=1 asks for that explicitly.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = join(ROOT, 'src');
const CACHE = join(ROOT, 'node_modules', '.cache', 'fsjob-cli');
// Bundles of other source versions are removed once this old (a process may still be loading one).
const STALE_MS = 24 * 60 * 60 * 1000;

/**
 * A digest naming everything the bundle is made from: each source file's
 * path, inode, size and change time (any write changes the ctime, a checkout
 * makes new inodes), package.json and this file the same way, and node's
 * version. Statting ~60 files costs ~1 ms; hashing their 1 MB of content
 * cost ~15 ms per start.
 */
function sourceKey() {
  const hash = createHash('sha256');
  hash.update(`${process.version}\0`);
  const add = (path) => {
    const { ino, size, ctimeNs } = statSync(path, { bigint: true });
    hash.update(`${relative(ROOT, path)}\0${ino}\0${size}\0${ctimeNs}\0`);
  };
  const walk = (dir) => {
    const entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) add(path);
    }
  };
  walk(SRC);
  add(join(ROOT, 'package.json'));
  add(fileURLToPath(import.meta.url));
  return hash.digest('hex').slice(0, 32);
}

async function build(dir) {
  const { build: esbuild } = await import('esbuild');
  mkdirSync(CACHE, { recursive: true });
  // Built aside and renamed into place: a concurrent start sees either no bundle or a whole one.
  const staging = `${dir}.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    await esbuild({
      entryPoints: [join(SRC, 'cli', 'main.ts')],
      outfile: join(staging, 'main.mjs'),
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      // Packages stay imports, resolved from node_modules/ above the cache as from src/.
      packages: 'external',
      // Every module of the bundle shares its URL; src/base/source-dir.ts reads the real src/ from here.
      banner: { js: `const __FSJOB_SRC_DIR = ${JSON.stringify(`${SRC}/`)};` },
      sourcemap: 'linked',
      // `fsjob conformance` runs the suite's TypeScript (outside src/) through tsx: never bundled.
      plugins: [{ name: 'leave-conformance', setup: (b) => b.onResolve({ filter: /\/commands\/conformance\.ts$/ }, (args) => ({ path: args.path, external: true })) }],
      logLevel: 'silent',
    });
    try {
      renameSync(staging, dir);
    } catch (error) {
      if (!existsSync(join(dir, 'main.mjs'))) throw error; // else another start won the race
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  // Pruning is housekeeping: another start may be pruning the same entries, and nothing here may fail a built bundle.
  for (const name of readdirSync(CACHE)) {
    const path = join(CACHE, name);
    try {
      if (path !== dir && Date.now() - statSync(path).mtimeMs > STALE_MS) rmSync(path, { recursive: true, force: true });
    } catch {
      // gone already, or not ours to remove
    }
  }
}

/**
 * main() of the compiled CLI, or undefined to run the sources through tsx.
 * The bundle serves a named command other than `fsjob conformance` (which it
 * leaves out); `fsjob --help`, `fsjob help` and a mistyped name load every
 * command, so they take the tsx path.
 */
export async function compiledMain(argv) {
  if (process.env.FSJOB_TSX === '1') return undefined;
  const command = argv.find((arg) => !arg.startsWith('-'));
  if (command === undefined || command === 'conformance') return undefined;
  try {
    const dir = join(CACHE, sourceKey());
    const entry = join(dir, 'main.mjs');
    if (!existsSync(entry)) await build(dir);
    const bundle = await import(pathToFileURL(entry).href);
    return bundle.COMMAND_NAMES.includes(command) ? bundle.main : undefined;
  } catch {
    return undefined;
  }
}
