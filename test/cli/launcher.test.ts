/**
 * bin/fsjob.js, the command in a checkout: it runs dist/bin/fsjob.js when
 * dist/ is built from the sources as they are, and the sources through tsx
 * (saying so) when it is not. Checked on a copy of the checkout's layout
 * (bin/, tools/build/, package.json copied; src/ and conformance/ linked;
 * dist/ copied with one module marked), so that making its dist/ stale
 * leaves this checkout's alone.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import fse from 'fs-extra';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanupAll, freshDir } from '../support/helpers.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NOTE = 'fsjob: dist/ is not built from these sources; running them through tsx';

/** A tree laid out like the checkout whose dist/ answers --version with "from-dist". */
async function copyOfCheckout(): Promise<string> {
  const dir = await freshDir('launcher');
  for (const file of ['bin', 'tools/build', 'package.json']) await fse.copy(join(ROOT, file), join(dir, file));
  for (const name of ['src', 'conformance', 'node_modules']) await symlink(join(ROOT, name), join(dir, name));
  await fse.copy(join(ROOT, 'dist'), join(dir, 'dist'));
  // The command's entry answers --version with the version the build wrote into it.
  const entry = join(dir, 'dist', 'bin', 'fsjob.js');
  const text = await readFile(entry, 'utf8');
  const written = (JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  assert.ok(text.includes(`printVersion(\`${written}`), 'dist/bin/fsjob.js prints the version written in at build time');
  await writeFile(entry, text.replace(`printVersion(\`${written}`, 'printVersion(`from-dist'));
  await markCurrent(dir);
  return dir;
}

/** Writes the copy's own source key into its dist/, as a build there would. */
async function markCurrent(dir: string): Promise<void> {
  const key = execFileSync(process.execPath, ['--input-type=module', '-e', `import { sourceKey } from ${JSON.stringify(join(dir, 'tools/build/inputs.mjs'))}; process.stdout.write(sourceKey());`], { encoding: 'utf8' });
  await writeFile(join(dir, 'dist', '.source-key'), key);
}

function version(dir: string, env: NodeJS.ProcessEnv = {}): { stdout: string; stderr: string; status: number | null } {
  const run = spawnSync(process.execPath, [join(dir, 'bin', 'fsjob.js'), '--version'], { encoding: 'utf8', env: { ...process.env, FSJOB_TSX: '', FSJOB_DIST_KEY: '', ...env }, timeout: 120_000 });
  return { stdout: run.stdout.trim(), stderr: run.stderr, status: run.status };
}

const launcher = suite('bin/fsjob.js in a checkout');
launcher.after(cleanupAll);

launcher('a current dist/ is what runs, without a word on stderr', async () => {
  const dir = await copyOfCheckout();
  const run = version(dir);
  assert.equal(run, { stdout: 'from-dist', stderr: '', status: 0 });
});

launcher('a stale dist/ is not run: the sources run through tsx, and stderr says why', async () => {
  const dir = await copyOfCheckout();
  await writeFile(join(dir, 'dist', '.source-key'), 'built-from-other-sources');
  const run = version(dir);
  assert.is(run.status, 0);
  assert.is(run.stdout, JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')).version, 'the version the sources read from package.json');
  assert.match(run.stderr, NOTE);
});

launcher('a source changed after the build makes dist/ stale (inputs are statted, not trusted)', async () => {
  const dir = await copyOfCheckout();
  // bin/fsjob.mts is an input of the build; rewriting it (same bytes) changes its change time.
  await writeFile(join(dir, 'bin', 'fsjob.mts'), await readFile(join(dir, 'bin', 'fsjob.mts')));
  const run = version(dir);
  assert.is.not(run.stdout, 'from-dist');
  assert.match(run.stderr, NOTE);
});

launcher('every build script under tools/build/ is an input: editing one makes dist/ stale', async () => {
  const { INPUT_FILES } = (await import('../../tools/build/inputs.mjs')) as { INPUT_FILES: readonly string[] };
  const scripts = (await readdir(join(ROOT, 'tools', 'build'))).filter((name) => /\.(ts|mjs)$/.test(name) && !name.endsWith('.d.mts')).map((name) => `tools/build/${name}`);
  assert.ok(scripts.length >= 5, 'the build scripts were found');
  for (const script of scripts) assert.ok(INPUT_FILES.includes(script), `${script} is in INPUT_FILES (tools/build/inputs.mjs)`);
});

launcher('FSJOB_DIST_KEY vouches for the dist/ built with that key, however the sources changed since', async () => {
  const dir = await copyOfCheckout();
  const key = await readFile(join(dir, 'dist', '.source-key'), 'utf8');
  await writeFile(join(dir, 'bin', 'fsjob.mts'), await readFile(join(dir, 'bin', 'fsjob.mts')));
  assert.equal(version(dir, { FSJOB_DIST_KEY: key }), { stdout: 'from-dist', stderr: '', status: 0 });
  assert.is.not(version(dir, { FSJOB_DIST_KEY: 'another-build' }).stdout, 'from-dist', 'a key of another build vouches for nothing');
});

launcher('FSJOB_TSX=1 runs the sources even with a current dist/, and says nothing', async () => {
  const dir = await copyOfCheckout();
  const run = version(dir, { FSJOB_TSX: '1' });
  assert.is(run.status, 0);
  assert.is.not(run.stdout, 'from-dist');
  assert.is(run.stderr, '');
});

launcher.run();
