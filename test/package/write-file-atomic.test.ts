/**
 * Why protocol records are not written with write-file-atomic (7.x), shown on
 * real directories rather than assumed (spec/design-notes.md). fsjob uses it
 * for the files a user names outside every queue (`--output FILE`, bench
 * results); records go through src/fs/safefs.ts's publishRecord, which does
 * each of these three things the other way:
 *
 * 1. it resolves the target with realpath(): a symlink at the target is
 *    followed, and the write lands wherever it points (SEC-2 refuses it);
 * 2. it opens its temp file with 'w' (O_CREAT|O_TRUNC, no O_EXCL, no
 *    O_NOFOLLOW) at a name a process can predict: a link planted there is
 *    followed and what it points to truncated (PUB-1 asks for O_EXCL|O_NOFOLLOW);
 * 3. it fsyncs the file but never the directory: after a power loss the
 *    rename may not have happened (PUB-5 fsyncs the directory).
 *
 * Each runs in a child process so that write-file-atomic's counter of
 * invocations (part of its temp names) starts from zero.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { constants } from 'node:fs';
import { lstat, mkdir, readFile, readlink, readdir, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { runWithCrash, callFamily, type CountedCall } from '../../conformance/crash/run.ts';
import { interposerPath } from '../../conformance/crash/interposer.ts';
import { publishRecord } from '../../src/fs/safefs.ts';
import { cleanupAll, freshDir, rejectsWith } from '../support/helpers.ts';

const WRITE_FILE_ATOMIC = createRequire(import.meta.url).resolve('write-file-atomic');
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A CommonJS child that writes `text` to argv[2] with write-file-atomic, after `before` (JS with target in scope). */
function childScript(before = ''): string {
  return [
    `const writeFileAtomic = require(${JSON.stringify(WRITE_FILE_ATOMIC)});`,
    "const crypto = require('node:crypto');",
    "const fs = require('node:fs');",
    'const target = process.argv[2];',
    // write-file-atomic's own temp name (lib/index.js getTmpname): sha1 of its file name, pid, thread id and invocation count.
    `const predicted = target + '.' + crypto.createHash('sha1').update(${JSON.stringify(WRITE_FILE_ATOMIC)}).update(String(process.pid)).update('0').update('1').digest().readUInt32BE(0);`,
    before,
    "writeFileAtomic(target, 'new contents\\n').then(() => process.stdout.write(predicted), (error) => { process.stderr.write(String(error)); process.exit(1); });",
  ].join('\n');
}

async function scriptFile(dir: string, before = ''): Promise<string> {
  const file = join(dir, 'write.cjs');
  await writeFile(file, childScript(before));
  return file;
}

const wfa = suite('write-file-atomic 7 (why records do not use it)');
wfa.after(cleanupAll);

wfa('1. it follows a symlink at the target: the bytes land outside the directory, the link stays; publishRecord refuses (SEC-2)', async () => {
  const base = await freshDir('wfa-realpath');
  const inside = join(base, 'queue');
  const outside = join(base, 'elsewhere');
  await mkdir(inside, { mode: 0o700 });
  await mkdir(outside);
  await writeFile(join(outside, 'victim'), 'precious\n');
  await symlink(join(outside, 'victim'), join(inside, 'state.1.json'));
  execFileSync(process.execPath, [await scriptFile(base), join(inside, 'state.1.json')]);
  assert.is(await readFile(join(outside, 'victim'), 'utf8'), 'new contents\n', 'the file the link points to was replaced');
  assert.ok((await lstat(join(inside, 'state.1.json'))).isSymbolicLink(), 'the name in the directory is still the link');

  await writeFile(join(outside, 'victim'), 'precious\n');
  await rejectsWith(publishRecord(inside, 'state.1.json', '{}', 'rename'), 'SYMLINK_REFUSED');
  assert.is(await readFile(join(outside, 'victim'), 'utf8'), 'precious\n', 'publishRecord left it alone');
});

wfa('2. its temp name is predictable and opened without O_EXCL|O_NOFOLLOW: a link planted there truncates its target, and the link replaces the record', async () => {
  const base = await freshDir('wfa-temp');
  const dir = join(base, 'queue');
  await mkdir(dir, { mode: 0o700 });
  await writeFile(join(base, 'victim'), 'precious\n');
  const target = join(dir, 'report.json');
  const planted = `fs.symlinkSync(${JSON.stringify(join(base, 'victim'))}, predicted);`;
  const predicted = execFileSync(process.execPath, [await scriptFile(base, planted), target], { encoding: 'utf8' });
  assert.ok(predicted.startsWith(`${target}.`), predicted);
  assert.is(await readFile(join(base, 'victim'), 'utf8'), 'new contents\n', 'the open followed the planted link and wrote through it');
  assert.ok((await lstat(target)).isSymbolicLink(), 'the rename moved the planted link over the target');
  assert.is(await readlink(target), join(base, 'victim'));
  assert.equal(await readdir(dir), ['report.json'], 'no temp name left: the planted one became the record');
});

/** The counted calls of one write-file-atomic call under the crash injector (root: dir). */
async function callsOf(dir: string, base: string): Promise<CountedCall[] | string> {
  try {
    await interposerPath();
  } catch (error) {
    return `the crash injector needs cc: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`;
  }
  const result = await runWithCrash({ argv: [process.execPath, await scriptFile(base), join(dir, 'report.json')], cwd: base, root: dir });
  assert.is(result.exitCode, 0, result.stderr);
  return result.calls;
}

wfa('2b. its temp file is opened O_CREAT|O_TRUNC, without O_EXCL and without O_NOFOLLOW (the injector logs the flags)', async () => {
  const base = await freshDir('wfa-flags');
  const dir = join(base, 'queue');
  await mkdir(dir, { mode: 0o700 });
  const calls = await callsOf(dir, base);
  if (typeof calls === 'string') {
    console.log(`  skipped: ${calls}`);
    return;
  }
  const opens = calls.filter((call) => callFamily(call.op) === 'open' && call.path.startsWith(join(dir, 'report.json.')));
  assert.is(opens.length, 1, JSON.stringify(calls));
  const flags = opens[0]?.flags ?? -1;
  assert.ok(flags >= 0, 'the injector recorded the flags');
  assert.ok((flags & constants.O_CREAT) !== 0 && (flags & constants.O_TRUNC) !== 0, `flags ${flags}: O_CREAT|O_TRUNC`);
  assert.is(flags & constants.O_EXCL, 0, `flags ${flags}: no O_EXCL`);
  assert.is(flags & constants.O_NOFOLLOW, 0, `flags ${flags}: no O_NOFOLLOW`);
});

wfa('3. it fsyncs its temp file and never the directory; publishRecord fsyncs the directory after its rename (PUB-5)', async () => {
  const base = await freshDir('wfa-fsync');
  const dir = join(base, 'queue');
  await mkdir(dir, { mode: 0o700 });
  const calls = await callsOf(dir, base);
  if (typeof calls === 'string') {
    console.log(`  skipped: ${calls}`);
    return;
  }
  const families = calls.map((call) => `${callFamily(call.op)} ${call.path}`);
  const fsyncs = calls.filter((call) => callFamily(call.op) === 'fsync');
  const temp = join(dir, 'report.json.');
  assert.ok(fsyncs.some((call) => call.path.startsWith(temp)), `the temp file is fsynced: ${families.join('; ')}`);
  assert.ok(families.some((line) => line.startsWith(`rename ${temp}`)), `the temp file is renamed over report.json: ${families.join('; ')}`);
  assert.not.ok(fsyncs.some((call) => call.path === dir), `no fsync of the directory: ${families.join('; ')}`);

  // The same publication through safefs, built as dist/ builds it (esbuild; in dist/ it is inside a chunk), in a child under the injector.
  const ours = join(base, 'ours');
  await mkdir(ours, { mode: 0o700 });
  const script = join(base, 'publish.mjs');
  await build({
    stdin: { contents: `import { publishRecord } from ${JSON.stringify(join(ROOT, 'src', 'fs', 'safefs.ts'))};\nawait publishRecord(process.argv[2], 'report.json', 'new contents\\n', 'rename');\n`, resolveDir: ROOT, loader: 'ts' },
    outfile: script,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'silent',
    plugins: [{ name: 'installed-write-file-atomic', setup: (b) => b.onResolve({ filter: /^write-file-atomic$/ }, () => ({ path: WRITE_FILE_ATOMIC, external: true })) }],
  });
  const published = await runWithCrash({ argv: [process.execPath, script, ours], cwd: base, root: ours });
  assert.is(published.exitCode, 0, published.stderr);
  const shown = published.calls.map((call) => `${callFamily(call.op)} ${call.path}`).join('; ');
  const rename = published.calls.find((call) => callFamily(call.op) === 'rename');
  const dirSync = published.calls.find((call) => callFamily(call.op) === 'fsync' && call.path === ours);
  assert.ok(rename !== undefined && dirSync !== undefined && dirSync.k > rename.k, `publishRecord fsyncs the directory after the rename: ${shown}`);
});

wfa.run();
