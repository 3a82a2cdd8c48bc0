/**
 * The package as a user gets it (issue 14's CI proof): `npm pack`, the
 * tarball installed into a fresh app offline (tools/package/app.ts: the
 * dependencies come from the local npm cache that `npm ci` filled), and then
 * in that app, at once:
 *
 * (a) a plain .mjs enqueues, works and waits on jobs; a .cjs require()s it;
 * (b) `tsc --noEmit` of a strict NodeNext file using the public types, whose
 *     one misspelt member is its only error, of README.md's Node example,
 *     and of a .cts that require()s every entry point's types;
 * (c) an esbuild bundle of a small consumer runs a payload job (and a command
 *     job) from a directory without node_modules, and a CommonJS bundle of
 *     the .cjs gives what it gives;
 * (d) the installed `fsjob` runs the demo and `fsjob conformance --case
 *     behaviour/` against the reference.
 *
 * Also what the tarball holds (a package.json without scripts, so npm counts
 * no install script and warns of none; a README whose links all lead to
 * files it holds), that packing leaves the repository's package.json and
 * README.md as they were, that `npm ci` of the app prints no warning, and
 * that the install stays under 3 MB (a size, not a time: start-up times are
 * bench/package.bench.ts's). The size is the disk space, as `du` counts it
 * and a user measures it: the blocks of every file and directory of fsjob
 * and its dependencies (lstat's st_blocks, 512 bytes each), so each file's
 * last partly filled block counts in full (on ext4 with 4 KB blocks about 2
 * KB a file, which is why dist/ holds chunks rather than a file per module:
 * tools/build/cli-bundle.ts; fsjob has no run-time dependency now, but one
 * would count). `du -sk node_modules` of an app that depends on fsjob alone
 * counts, besides, node_modules/ itself, its .bin/ and npm's
 * .package-lock.json (12 KB).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { lstat, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import fse from 'fs-extra';
import { ensureDist } from '../../tools/build/build.ts';
import { SHARED_CHUNK } from '../../tools/build/declarations.ts';
import { freshApp, packRepo, type FreshApp } from '../../tools/package/app.ts';
import { readmeBlock } from '../../tools/readme/blocks.ts';
import '../support/cli.ts';

const exec = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
/** 3 MB (2,929 KiB, what `du -sk` prints). */
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

/** The disk space of a tree as `du` counts it: the blocks of the directory and of everything in it, links not followed, less the nested node_modules/ folders (their packages are counted on their own). */
async function diskBytes(dir: string): Promise<{ disk: number; files: number }> {
  const out = { disk: (await lstat(dir)).blocks * 512, files: 0 };
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const at = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name === 'node_modules') continue;
      const inner = await diskBytes(at);
      out.disk += inner.disk;
      out.files += inner.files;
    } else {
      out.disk += (await lstat(at)).blocks * 512;
      out.files += 1;
    }
  }
  return out;
}

let work = '';
let tarball = '';
let app: FreshApp | undefined;

const installed = suite('the packed package in a fresh app');

let manifestBefore = '';
let manifestAfter = '';
let readmeBefore = '';
let readmeAfter = '';

installed.before(async () => {
  // The tarball ships dist/ as built: pack's prepare (build --if-stale) then finds it current.
  await ensureDist({ types: true });
  work = await mkdtemp(join(tmpdir(), 'fsjob-package-test-'));
  [manifestBefore, readmeBefore] = await Promise.all([readFile(join(ROOT, 'package.json'), 'utf8'), readFile(join(ROOT, 'README.md'), 'utf8')]);
  tarball = await packRepo(work);
  [manifestAfter, readmeAfter] = await Promise.all([readFile(join(ROOT, 'package.json'), 'utf8'), readFile(join(ROOT, 'README.md'), 'utf8')]);
  app = await freshApp(tarball, { extra: ['@types/node'], parent: work });
  for (const file of await readdir(FIXTURES)) await fse.copy(join(FIXTURES, file), join(app.dir, file));
  // README.md's Node example compiles as strict TypeScript beside app.ts (test/readme/ runs it).
  await writeFile(join(app.dir, 'readme-example.ts'), readmeBlock(join(ROOT, 'README.md'), 'node-example').text);
});

installed.after(async () => {
  if (work !== '') await rm(work, { recursive: true, force: true });
});

installed('the tarball holds dist/, schemas/, LICENSE and README, and no sources, spec, tests or sh implementation', async () => {
  const { stdout } = await exec('tar', ['-tzf', tarball], { maxBuffer: 16 * 1024 * 1024 });
  const names = stdout.split('\n').filter((name) => name !== '').map((name) => name.replace(/^package\//, ''));
  for (const needed of ['package.json', 'LICENSE', 'README.md', 'dist/bin/fsjob.js', 'dist/src/index.js', 'dist/src/index.d.ts', 'dist/src/records/generated/validators.js', 'dist/conformance/impls/reference/manifest.json', 'schemas/spec.schema.json', 'dist/conformance/crash/interpose.c.gz']) {
    assert.ok(names.includes(needed), `${needed} is in the tarball`);
  }
  const unwanted = names.filter((name) => /^(src|spec|test|bench|tools|bin|conformance)\//.test(name) || /\.ts$/.test(name.replace(/\.d\.ts$/, '')) || name.includes('impls/sh') || name.startsWith('dist/.'));
  assert.equal(unwanted, []);
  const manifest = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  assert.is(manifest.dependencies, undefined, 'no runtime dependency: yargs and write-file-atomic are bundled into dist/bin/chunks/');
  const { stdout: code } = await exec('sh', ['-c', 'tar -xzOf "$1" --wildcards "package/dist/*.js"', 'sh', tarball], { maxBuffer: 64 * 1024 * 1024 });
  const packages = new Set([...code.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\(\s*)"([@a-z][\w@/:.-]*)"/g)].map((match) => match[1] as string).filter((name) => !name.startsWith('node:') && !builtinModules.includes(name)));
  assert.equal([...packages], [], 'dist/ imports no package');
  assert.ok(names.includes('dist/bin/THIRD-PARTY-LICENSES.txt'), 'the licences of what the command bundles ship with it');
  // The declarations: one .d.ts per typed entry point of the exports and the one they share (tools/build/declarations.ts), no other.
  const typed = Object.values((JSON.parse(manifestBefore) as { exports: Record<string, string | { types?: string }> }).exports).flatMap((target) => (typeof target === 'object' && target.types !== undefined ? [target.types.replace(/^\.\//, '')] : []));
  assert.equal(names.filter((name) => name.endsWith('.d.ts')).sort(), [...typed, `dist/${SHARED_CHUNK}.d.ts`].sort());
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

installed('every link of the shipped README leads to a file the package holds (the spec, the benchmarks and the other implementations stay in the repository); packing leaves the repository\'s README as it was', async () => {
  const [{ stdout: listing }, { stdout: readme }] = await Promise.all([exec('tar', ['-tzf', tarball], { maxBuffer: 16 * 1024 * 1024 }), exec('tar', ['-xzOf', tarball, 'package/README.md'], { maxBuffer: 16 * 1024 * 1024 })]);
  const names = listing.split('\n').map((name) => name.replace(/^package\//, ''));
  const targets = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => (match[1] as string).split('#')[0] as string).filter((target) => target !== '' && !/^[a-z][a-z0-9+.-]*:/i.test(target));
  assert.ok(targets.some((target) => target.startsWith('schemas/')), `the README still links to what ships: ${targets.join(', ')}`);
  assert.equal(targets.filter((target) => !names.some((name) => name === target || name.startsWith(`${target.replace(/\/$/, '')}/`))), [], 'links to files the package does not hold');
  assert.match(readme, 'spec/README.md in the fsjob repository');
  assert.is(readmeAfter, readmeBefore);
  assert.equal((await readdir(ROOT)).filter((name) => name.includes('README.md.')), [], 'no copy of the README is left behind');
});

installed(`the install (fsjob and its dependencies) takes under ${INSTALL_MAX_BYTES / 1e6} MB of disk, as du counts it`, async () => {
  assert.ok(app !== undefined);
  const lock = JSON.parse(await readFile(join(app.dir, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
  const runtime = Object.keys(lock.packages).filter((at) => at !== '' && !at.includes('@types/') && !at.includes('undici-types'));
  assert.ok(runtime.includes('node_modules/fsjob'), runtime.join(', '));
  let disk = 0;
  let files = 0;
  for (const at of runtime) {
    const tree = await diskBytes(join(app.dir, at));
    disk += tree.disk;
    files += tree.files;
  }
  const figure = `installed: ${disk} bytes of disk (${Math.ceil(disk / 1024)} KiB) in ${files} files of ${runtime.length} packages`;
  assert.ok(disk <= INSTALL_MAX_BYTES, figure);
  process.stdout.write(`${figure}, ${INSTALL_MAX_BYTES - disk} bytes under the bound\n`); // the README's figures follow this

});

installed('(a)-(d) a plain .mjs, a .cjs, a strict NodeNext tsc, an esbuild bundle and the installed CLI all work', async () => {
  assert.ok(app !== undefined);
  const dir = app.dir;
  const bundleDir = await mkdtemp(join(work, 'bundle-'));
  const [plain, required, tsc, bundled, requiredBundle, demo, conformance] = await Promise.all([
    run(process.execPath, ['enqueue-work-wait.mjs'], dir),
    run(process.execPath, ['require.cjs'], dir),
    run(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], dir),
    (async (): Promise<Run> => {
      await build({ entryPoints: [join(dir, 'bundled-consumer.mjs')], outfile: join(bundleDir, 'consumer.mjs'), bundle: true, platform: 'node', format: 'esm', target: 'node20', logLevel: 'silent', absWorkingDir: dir });
      return run(process.execPath, ['consumer.mjs'], bundleDir);
    })(),
    // A CommonJS bundle has no import.meta.url: nothing the library loads may need it to start.
    (async (): Promise<Run> => {
      await build({ entryPoints: [join(dir, 'require.cjs')], outfile: join(bundleDir, 'require.cjs'), bundle: true, platform: 'node', format: 'cjs', target: 'node20', logLevel: 'silent', absWorkingDir: dir });
      return run(process.execPath, ['require.cjs'], bundleDir);
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
  assert.equal((await readdir(bundleDir)).sort(), ['consumer.mjs', 'require.cjs']);
  assert.is(bundled.code, 0, bundled.stderr);
  const c = JSON.parse(bundled.stdout) as { root: string; payload: string; result: unknown; command: string };
  assert.equal([c.payload, c.result, c.command], ['succeeded', 'hello bundle', 'succeeded']);
  assert.is(requiredBundle.code, 0, requiredBundle.stderr);
  assert.equal(JSON.parse(requiredBundle.stdout), JSON.parse(required.stdout), 'the CommonJS bundle gives what require() does');

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
