/**
 * bin/compiled.js: `fsjob` runs from a bundle compiled from the sources into
 * node_modules/.cache/fsjob-cli/<key>/, and does the same work as the
 * sources run through tsx (FSJOB_TSX=1).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SRC_DIR } from '../../src/base/source-dir.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin', 'fsjob.js');
const CACHE = join(ROOT, 'node_modules', '.cache', 'fsjob-cli');

function fsjob(args: string[], env: NodeJS.ProcessEnv = {}): string {
  return execFileSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 120_000, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Bundles in the cache, newest first. */
function bundles(): string[] {
  if (!existsSync(CACHE)) return [];
  return readdirSync(CACHE)
    .map((name) => join(CACHE, name, 'main.mjs'))
    .filter((path) => existsSync(path))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
}

const compiled = suite('the compiled fsjob CLI (bin/compiled.js)');
compiled.after(cleanupAll);

compiled('a start leaves a bundle in the cache that names the real src/ for the files read beside the code', async () => {
  const queue = join(await freshDir('compiled-cli'), 'q');
  fsjob(['init', '--queue', queue]);
  const newest = bundles()[0];
  assert.ok(newest !== undefined, `no bundle under ${CACHE}`);
  assert.ok(readFileSync(newest, 'utf8').startsWith(`const __FSJOB_SRC_DIR = ${JSON.stringify(`${SRC_DIR}`)};`), 'the banner names src/');
  assert.ok(existsSync(join(SRC_DIR, 'consumer', 'guardian.sh')), 'SRC_DIR is the real src/');
});

compiled('the bundle and the sources through tsx do the same work: a job enqueued by one is run by the other', async () => {
  const queue = join(await freshDir('compiled-cli'), 'q');
  fsjob(['init', '--queue', queue], { FSJOB_TSX: '1' });
  const id = fsjob(['enqueue', '--queue', queue, '--', 'sh', '-c', 'echo ran']).trim();
  // The guardian (src/consumer/guardian.sh) must be found from the bundle for a command to run at all.
  fsjob(['work', '--queue', queue, '--drain']);
  const receipt = JSON.parse(readFileSync(join(queue, 'jobs', id, 'receipt.json'), 'utf8')) as { outcome: string };
  assert.is(receipt.outcome, 'succeeded');
  assert.is(readFileSync(join(queue, 'jobs', id, 'stdout.1'), 'utf8'), 'ran\n');
  const viaTsx = JSON.parse(fsjob(['status', '--queue', queue, '--json', id], { FSJOB_TSX: '1' })) as { status: string };
  const viaBundle = JSON.parse(fsjob(['status', '--queue', queue, '--json', id])) as { status: string };
  assert.equal(viaBundle, viaTsx);
  // The precompiled validators (src/records/generated/validators.cjs) are loaded from beside the sources.
  const report = JSON.parse(fsjob(['validate', '--json', queue])) as { summary: { errors: number } };
  assert.is(report.summary.errors, 0);
});

compiled('`fsjob help` and a mistyped command, which load every command, are answered through tsx, not refused by the bundle', () => {
  assert.match(fsjob(['help']), 'fsjob <command> [options]');
  let status: number | null = null;
  let stderr = '';
  try {
    fsjob(['stauts']);
  } catch (error) {
    ({ status, stderr } = error as { status: number; stderr: string });
  }
  assert.is(status, 2, 'a usage error');
  assert.match(stderr, 'Did you mean status?');
});

compiled.run();
