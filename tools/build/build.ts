/**
 * The build: dist/ from the sources (`npm run build`; `prepare` runs it, so
 * `npm ci` in this repository and `npm pack` both produce it).
 *
 *   node --import tsx tools/build/build.ts          JavaScript and .d.ts files
 *   node --import tsx tools/build/build.ts --js     JavaScript only (what `npm test` and bin/fsjob.js need; ~1 s)
 *   node --import tsx tools/build/build.ts --if-stale [--js]   nothing when dist/ is current
 *
 * dist/ mirrors the repository where a path is looked up: dist/src/ (the
 * library's entry points, as package.json's exports name them, their .d.ts
 * files and the generated modules), dist/conformance/ (the suite's command
 * that `fsjob conformance` loads, the crash injector's C sources, the
 * vectors, the reference's manifest) and dist/bin/fsjob.js (the command;
 * the manifest names it as ../../../bin/fsjob.js from its own directory, in
 * the checkout and in dist/ alike). The code itself is in dist/bin/chunks/;
 * a module that finds a file through import.meta.url names it so that the
 * path holds from there too (tools/build/cli-bundle.ts checks).
 *
 * JavaScript: one esbuild build with code splitting of the command, the
 * library's entry points, the suite's command and the scan worker
 * (tools/build/cli-bundle.ts says why): each module of src/ and conformance/
 * is in one chunk of dist/bin/chunks/, shared by the entries that use it.
 * esbuild is what tsx runs the sources with, so the sources in tests and
 * dist/ in use are the same transform.
 * Three values are written in at build time, so that
 * nothing in dist/ needs a file beside it that a bundle would lose: the
 * package version (src/base/version.ts) and the guardian's and the
 * spawner's scripts (src/consumer/guardian.ts, src/consumer/spawner.ts).
 * Declarations: tsc, `.ts` imports rewritten to `.js`, then bundled into a
 * .d.ts file per entry point and one shared file (tools/build/declarations.ts).
 *
 * dist/ is replaced whole: built aside, then renamed into place, so a
 * process starting meanwhile sees the old dist/ or the new one.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { transform } from 'esbuild';
// fs-extra's copy: recursive, stable on Node 20 (where fs.cp is still experimental).
import fse from 'fs-extra';
import { buildBundle } from './cli-bundle.ts';
import { bundleDeclarations, surfaceChanges, surfacesOf, type Surface } from './declarations.ts';
import { shippedScript } from './sh-comments.ts';
import { DIST, INPUT_DIRS, INPUT_FILES, JS_KEY, ROOT, TYPES_KEY, builtKey, sourceKey } from './inputs.mjs';

const run = promisify(execFile);

/** Files copied into dist/ (relative to the root): what modules read beside themselves at run time. */
const ASSETS: readonly RegExp[] = [
  /^src\/records\/generated\/(validators|documents)\.js$/,
  /^conformance\/vectors\/[^/]+\.json$/,
  /^conformance\/crash\/[^/]+\.[ch]$/,
  /^conformance\/impls\/reference\/manifest\.json$/,
];

/**
 * Assets that dist/ holds in a smaller form, since nobody reads them there
 * (the install stays under 3 MB, test/package/install.test.ts): the
 * generated validators minified (ajv's code, 0.7 MB as generated, is for
 * machines; the exports keep their names), the vectors gzipped
 * (JSON of many near-identical records: 0.8 MB becomes 50 KB;
 * conformance/cases/vectors.ts reads either form), and the crash
 * injector's C sources gzipped (64 KB become 18 KB; compiled only by
 * `fsjob conformance --crash`, conformance/crash/interposer.ts, which
 * reads either form).
 */
async function copyAsset(asset: string, out: string): Promise<void> {
  const from = path.join(ROOT, asset);
  const to = path.join(out, asset);
  if (asset === 'src/records/generated/validators.js') {
    await mkdir(path.dirname(to), { recursive: true });
    await writeFile(to, (await transform(await readFile(from, 'utf8'), { minify: true, format: 'esm', target: 'node20', legalComments: 'none' })).code);
  } else if (asset.startsWith('conformance/vectors/') || asset.startsWith('conformance/crash/')) {
    await mkdir(path.dirname(to), { recursive: true });
    await writeFile(`${to}.gz`, gzipSync(await readFile(from), { level: 9 }));
  } else await fse.copy(from, to);
}

/** Sources that are not modules of dist/: the loader shim only the sources need, the sh scripts (written into guardian.js and spawner.js), the command's entry (bundled by cli-bundle.ts), the .d.ts of generated modules (read by the declaration bundle). */
const LEFT_OUT: readonly RegExp[] = [/^src\/validator\/scan-worker-entry\.mjs$/, /^src\/.*\.d\.ts$/, /^src\/consumer\/(guardian|spawner)\.sh$/, /^bin\/fsjob\.mts$/];

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...(await walk(rel)));
    else if (entry.isFile()) out.push(rel);
  }
  return out;
}

/** Every input file, sorted into modules to compile and assets to copy; anything else under an input directory is an error (decide where it goes). */
async function inputs(): Promise<{ modules: string[]; assets: string[] }> {
  const modules: string[] = [];
  const assets: string[] = [];
  const files = [...(await Promise.all(INPUT_DIRS.map(walk))).flat(), ...INPUT_FILES];
  for (const file of files) {
    if (ASSETS.some((pattern) => pattern.test(file))) assets.push(file);
    else if (file.endsWith('.ts') && !file.endsWith('.d.ts') && (file.startsWith('src/') || file.startsWith('conformance/'))) modules.push(file);
    else if (!LEFT_OUT.some((pattern) => pattern.test(file)) && !file.endsWith('.md') && !file.startsWith('tools/') && file !== 'package.json') {
      throw new Error(`tools/build/build.ts: ${file} is neither compiled nor copied into dist/; add it to ASSETS or LEFT_OUT`);
    }
  }
  return { modules: modules.sort(), assets: assets.sort() };
}

async function buildJavaScript(out: string): Promise<void> {
  const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const script = async (name: string): Promise<string> => shippedScript(name, await readFile(path.join(ROOT, 'src', 'consumer', name), 'utf8'));
  const [guardian, spawner] = await Promise.all([script('guardian.sh'), script('spawner.sh')]);
  const define = { __FSJOB_VERSION: JSON.stringify(pkg.version), __FSJOB_GUARDIAN_SCRIPT: JSON.stringify(guardian), __FSJOB_SPAWNER_SCRIPT: JSON.stringify(spawner) };
  await buildBundle(out, define);
}

/** `.d.ts` files name their imports as the sources do (./x.ts); a consumer's TypeScript resolves ./x.js. */
function rewriteDeclaration(text: string): string {
  return text.replace(/(from\s+|import\()(['"])(\.\.?\/[^'"]*)\.ts\2/g, (_whole, lead: string, quote: string, base: string) => `${lead}${quote}${base}.js${quote}`);
}

async function rewriteDeclarations(dir: string): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const at = path.join(dir, entry.name);
    if (entry.isDirectory()) await rewriteDeclarations(at);
    else if (entry.name.endsWith('.d.ts')) await writeFile(at, rewriteDeclaration(await readFile(at, 'utf8')));
  }
}

/** The .d.ts file of each entry point of package.json's exports, relative to dist/ without .d.ts: 'src/index', 'src/producer/index', ... */
async function typedEntries(): Promise<string[]> {
  const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, string | { types?: string }> };
  return Object.values(pkg.exports).flatMap((target) => (typeof target === 'object' && target.types !== undefined ? [path.relative('dist', target.types).replace(/\.d\.ts$/, '')] : []));
}

/**
 * tsc's declaration emit into a directory aside, then the bundle of what the
 * exports reach into `out` (tools/build/declarations.ts says why and how),
 * checked against tsc's files: the same names, types and documentation.
 */
async function buildDeclarations(out: string): Promise<void> {
  const emitted = `${out}-types`;
  const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    try {
      await run(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.build.json'), '--outDir', emitted], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
    } catch (error) {
      const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
      throw new Error(`tsc (declarations) failed:\n${stdout}${stderr}`);
    }
    // tsc does not copy the hand-written .d.ts of the generated JavaScript modules; a type they declare may be public.
    for (const file of (await walk('src')).filter((name) => name.endsWith('.d.ts'))) await fse.copy(path.join(ROOT, file), path.join(emitted, file));
    await rewriteDeclarations(emitted);
    const names = await typedEntries();
    const entries = (dir: string): Record<string, string> => Object.fromEntries(names.map((name) => [name, path.join(dir, `${name}.d.ts`)]));
    await bundleDeclarations(entries(emitted), out);
    const [tscSurface, bundleSurface] = surfacesOf(entries(emitted), entries(out)) as [Surface, Surface];
    const changes = surfaceChanges(tscSurface, bundleSurface);
    if (changes.length > 0) throw new Error(`tools/build/declarations.ts: the bundled declarations differ from tsc's:\n${changes.join('\n')}`);
  } finally {
    await rm(emitted, { recursive: true, force: true });
  }
}

/** Copies the .d.ts files of `from` (the current dist/) into `out`: a JavaScript-only build of unchanged sources keeps them. */
async function keepDeclarations(from: string, out: string): Promise<void> {
  for (const entry of await readdir(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name);
    const target = path.join(out, entry.name);
    if (entry.isDirectory()) await keepDeclarations(source, target);
    else if (entry.name.endsWith('.d.ts')) await fse.copy(source, target);
  }
}

export interface BuildOptions {
  /** Also emit the .d.ts files (tsc; tens of seconds). Default true. */
  types?: boolean;
  /** Say what was done on stdout. */
  log?: (line: string) => void;
}

/** Builds dist/ from the sources as they are now; resolves once dist/ is in place. */
export async function buildDist(options: BuildOptions = {}): Promise<void> {
  const types = options.types ?? true;
  const key = sourceKey(); // before reading anything: a change made during the build leaves dist/ stale, not wrongly current
  const started = Date.now();
  const { modules, assets } = await inputs();
  const staging = path.join(ROOT, `.dist-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    await mkdir(staging);
    await buildJavaScript(staging);
    for (const asset of assets) await copyAsset(asset, staging);
    let typesKey: string | undefined;
    if (types) {
      await buildDeclarations(staging);
      typesKey = key;
    } else if (builtKey(TYPES_KEY) === key) {
      await keepDeclarations(DIST, staging);
      typesKey = key;
    }
    if (typesKey !== undefined) await writeFile(path.join(staging, TYPES_KEY), typesKey);
    await writeFile(path.join(staging, JS_KEY), key);
    const old = `${staging}-old`;
    await rename(DIST, old).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
    await rename(staging, DIST).catch((error: NodeJS.ErrnoException) => {
      // Another build put its dist/ in place meanwhile: it is built from the same sources.
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
    });
    await rm(old, { recursive: true, force: true });
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  options.log?.(`built dist/ (${modules.length} modules, ${assets.length} files${types ? ', declarations' : ''}) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** Builds dist/ unless it is current (its JavaScript, and its declarations when `types`). */
export async function ensureDist(options: BuildOptions = {}): Promise<boolean> {
  const key = sourceKey();
  const current = builtKey(JS_KEY) === key && (options.types !== true || builtKey(TYPES_KEY) === key);
  if (current) return false;
  await buildDist(options);
  return true;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const types = !process.argv.includes('--js');
  const log = (line: string): void => void process.stdout.write(`${line}\n`);
  if (process.argv.includes('--if-stale')) {
    if (!(await ensureDist({ types, log }))) log('dist/ is current');
  } else await buildDist({ types, log });
}
