/**
 * The package as a user gets it (issue 14's CI proof): `npm pack`, the
 * tarball installed into a fresh app offline (tools/package/app.ts: the
 * dependencies come from the local npm cache that `npm ci` filled), and then
 * in that app, at once:
 *
 * (a) a plain .mjs enqueues, works and waits on jobs; a .cjs require()s it;
 * (b) `tsc --noEmit` of a strict NodeNext file using the public types, whose
 *     one misspelt member is its only error, and of README.md's Node example;
 * (c) an esbuild bundle of a small consumer runs a payload job (and a command
 *     job) from a directory without node_modules;
 * (d) the installed `fsjob` runs the demo and `fsjob conformance --case
 *     behaviour/` against the reference.
 *
 * Also what the tarball holds (a package.json without scripts, so npm counts
 * no install script and warns of none), that packing leaves the repository's
 * package.json as it was, that `npm ci` of the app prints no warning, and that
 * the install stays under 3 MB (a size, not a time: start-up times are
 * bench/package.bench.ts's). The size is the bytes of the installed files
 * (what `du --apparent-size` counts): `du` itself adds the slack of each
 * file's last block, which depends on the filesystem (about 1.3 MB of 4 KB
 * blocks over the 590 files of fsjob and its dependencies on ext4).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { lstat, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import fse from 'fs-extra';
import { ensureDist } from '../../tools/build/build.ts';
import { freshApp, packRepo, type FreshApp } from '../../tools/package/app.ts';
import { readmeBlock } from '../../tools/readme/blocks.ts';
import '../support/cli.ts';

const exec = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const INSTALL_MAX_BYTES = 3_000_000;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end; never throws for a non-zero exit. */
async function run(file: string, args: readonly string[], cwd: string, timeoutMs = 300_000): Promise<Run> {
  try {
    const { stdout, stderr } = await exec(file, args, { cwd, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number | string; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : -1, stdout: failed.stdout ?? '', stderr: `${failed.stderr ?? ''}${typeof failed.code === 'string' ? ` (${failed.code})` : ''}` };
  }
}

function treeBytes(files: { size: number }[]): number {
  return files.reduce((sum, file) => sum + file.size, 0);
}

async function filesUnder(dir: string): Promise<{ path: string; size: number }[]> {
  const out: { path: string; size: number }[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const at = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(at)));
    else out.push({ path: at, size: (await lstat(at)).size });
  }
  return out;
}

let work = '';
let tarball = '';
let app: FreshApp | undefined;

const installed = suite('the packed package in a fresh app');

let manifestBefore = '';
let manifestAfter = '';

installed.before(async () => {
  // The tarball ships dist/ as built: pack's prepare (build --if-stale) then finds it current.
  await ensureDist({ types: true });
  work = await mkdtemp(join(tmpdir(), 'fsjob-package-test-'));
  manifestBefore = await readFile(join(ROOT, 'package.json'), 'utf8');
  tarball = await packRepo(work);
  manifestAfter = await readFile(join(ROOT, 'package.json'), 'utf8');
  app = await freshApp(tarball, { extra: ['@types/node'], parent: work });
  for (const file of await readdir(FIXTURES)) await fse.copy(join(FIXTURES, file), join(app.dir, file));
  // README.md's Node example compiles as strict TypeScript beside app.ts (test/readme/ runs it).
  await writeFile(join(app.dir, 'readme-example.ts'), readmeBlock(join(ROOT, 'README.md'), 'node-example').text);
});

installed.after(async () => {
  if (work !== '') await rm(work, { recursive: true, force: true });
});

installed('the tarball holds dist/, schemas/, spec/, LICENSE and README, and no sources, tests or sh implementation', async () => {
  const { stdout } = await exec('tar', ['-tzf', tarball], { maxBuffer: 16 * 1024 * 1024 });
  const names = stdout.split('\n').filter((name) => name !== '').map((name) => name.replace(/^package\//, ''));
  for (const needed of ['package.json', 'LICENSE', 'README.md', 'dist/bin/fsjob.js', 'dist/src/index.js', 'dist/src/index.d.ts', 'dist/src/records/generated/validators.js', 'dist/conformance/impls/reference/manifest.json', 'schemas/spec.schema.json', 'spec/README.md']) {
    assert.ok(names.includes(needed), `${needed} is in the tarball`);
  }
  const unwanted = names.filter((name) => /^(src|test|bench|tools|bin|conformance)\//.test(name) || /\.ts$/.test(name.replace(/\.d\.ts$/, '')) || name.includes('impls/sh') || name.startsWith('dist/.'));
  assert.equal(unwanted, []);
  const manifest = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  assert.equal(Object.keys(manifest.dependencies).sort(), ['write-file-atomic'], 'runtime dependencies: only what dist/ imports (yargs is bundled into dist/bin/)');
  assert.ok(names.includes('dist/bin/THIRD-PARTY-LICENSES.txt'), 'the licences of what the command bundles ship with it');
});

installed('the shipped package.json has no scripts (no install script for npm to warn of); packing leaves the repository\'s as it was', async () => {
  const { stdout } = await exec('tar', ['-xzOf', tarball, 'package/package.json']);
  const shipped = JSON.parse(stdout) as Record<string, unknown>;
  const repository = JSON.parse(manifestBefore) as Record<string, unknown>;
  assert.is(shipped['scripts'], undefined);
  assert.equal(Object.keys(repository).filter((key) => key !== 'scripts'), Object.keys(shipped));
  assert.ok(typeof (repository['scripts'] as Record<string, string>)['prepare'] === 'string', 'the repository keeps prepare (npm ci builds dist/)');
  assert.is(manifestAfter, manifestBefore);
  assert.equal((await readdir(ROOT)).filter((name) => name.includes('package.json.')), [], 'no copy of the manifest is left behind');
  assert.ok(app !== undefined);
  assert.not.match(app.npmOutput, /warn|install-scripts/i, app.npmOutput);
});

installed(`the install (fsjob and its dependencies) is under ${INSTALL_MAX_BYTES / 1e6} MB`, async () => {
  assert.ok(app !== undefined);
  const lock = JSON.parse(await readFile(join(app.dir, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
  const runtime = Object.keys(lock.packages).filter((at) => at !== '' && !at.includes('@types/') && !at.includes('undici-types'));
  let bytes = 0;
  for (const at of runtime) {
    const dir = join(app.dir, at);
    if (await fse.pathExists(dir)) bytes += treeBytes((await filesUnder(dir)).filter((file) => !file.path.slice(dir.length).includes('/node_modules/')));
  }
  assert.ok(bytes < INSTALL_MAX_BYTES, `installed ${bytes} bytes in ${runtime.length} packages`);
});

installed('(a)-(d) a plain .mjs, a .cjs, a strict NodeNext tsc, an esbuild bundle and the installed CLI all work', async () => {
  assert.ok(app !== undefined);
  const dir = app.dir;
  const bundleDir = await mkdtemp(join(work, 'bundle-'));
  const [plain, required, tsc, bundled, demo, conformance] = await Promise.all([
    run(process.execPath, ['enqueue-work-wait.mjs'], dir),
    run(process.execPath, ['require.cjs'], dir),
    run(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], dir),
    (async (): Promise<Run> => {
      await build({ entryPoints: [join(dir, 'bundled-consumer.mjs')], outfile: join(bundleDir, 'consumer.mjs'), bundle: true, platform: 'node', format: 'esm', target: 'node20', logLevel: 'silent', absWorkingDir: dir });
      return run(process.execPath, ['consumer.mjs'], bundleDir);
    })(),
    run(app.bin, ['demo'], dir),
    run(app.bin, ['conformance', '--case', 'behaviour/', '--case', 'vectors/queue'], dir), // vectors/: dist/ ships them gzipped
  ]);

  // (a) ES modules, then CommonJS through require(esm).
  assert.is(plain.code, 0, plain.stderr);
  const a = JSON.parse(plain.stdout) as { root: string; payload: string; result: unknown; command: string; exit: number };
  assert.equal([a.payload, a.result, a.command, a.exit], ['succeeded', { n: 42 }, 'succeeded', 0]);
  assert.is(plain.stderr, '', 'no warning on stderr');
  assert.is(required.code, 0, required.stderr);
  assert.equal(JSON.parse(required.stdout), { requireModule: true, enqueue: 'function', openQueue: 'function', auditQueue: 'function', error: 'USAGE', findings: ['RECORD_SCHEMA'], sameClass: true });
  assert.is(required.stderr, '', 'no warning on stderr');

  // (b) The misspelt member is the only error, on its line.
  const source = (await readFile(join(dir, 'app.ts'), 'utf8')).split('\n');
  const misspeltLine = source.findIndex((line) => line.startsWith('// must not compile:')) + 2;
  const diagnostics = tsc.stdout.split('\n').filter((line) => /error TS\d+/.test(line));
  assert.is(tsc.code, 2, `tsc fails: ${tsc.stdout}${tsc.stderr}`);
  assert.is(diagnostics.length, 1, diagnostics.join('\n'));
  assert.match(diagnostics[0] ?? '', new RegExp(`^app\\.ts\\(${misspeltLine},\\d+\\): error TS2353: .*'timout_ms' does not exist in type`));

  // (c) The bundle carries what fsjob reads at run time (validators, schemas, the guardian script).
  assert.equal(await readdir(bundleDir), ['consumer.mjs']);
  assert.is(bundled.code, 0, bundled.stderr);
  const c = JSON.parse(bundled.stdout) as { root: string; payload: string; result: unknown; command: string };
  assert.equal([c.payload, c.result, c.command], ['succeeded', 'hello bundle', 'succeeded']);

  // (d) The installed command.
  assert.is(demo.code, 0, demo.stdout + demo.stderr);
  assert.match(demo.stdout, 'succeeds');
  assert.is(conformance.code, 0, conformance.stdout + conformance.stderr);
  assert.match(conformance.stdout, join('node_modules', 'fsjob', 'dist', 'conformance', 'impls', 'reference', 'manifest.json'));
  assert.match(conformance.stdout, /\d+ passed, 0 failed/);

  for (const root of [a.root, c.root]) await rm(join(root, '..'), { recursive: true, force: true });
  const demoQueue = /rm -rf (\S+)/.exec(demo.stdout)?.[1];
  if (demoQueue !== undefined && demoQueue.startsWith(tmpdir())) await rm(demoQueue, { recursive: true, force: true });
});

installed.run();
