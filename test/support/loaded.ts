/**
 * Which files a start of the built command (dist/bin/fsjob.js) loads: a
 * loader hook appends each file: URL loaded to a log, and the start's files
 * are read back from it (test/cli/start-up.test.ts,
 * test/cli/start-cache.test.ts). Which files, not how long.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as assert from 'uvu/assert';
import './cli.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The command as installed. */
export const ENTRY = join(ROOT, 'dist', 'bin', 'fsjob.js');

/** Registers a loader hook that appends each file: URL loaded to $FSJOB_LOADED_LOG. */
const HOOK = `import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(\`
import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  if (url.startsWith('file:')) appendFileSync(process.env.FSJOB_LOADED_LOG, url + '\\\\n');
  return next(url, context);
}\`));
`;

/** A directory for the starts (its hook and logs) with a queue in it, `q`. */
export async function startWork(prefix: string): Promise<{ work: string; queue: string }> {
  const work = await mkdtemp(join(tmpdir(), prefix));
  await writeFile(join(work, 'hook.mjs'), HOOK);
  const queue = join(work, 'q');
  const init = spawnSync(process.execPath, [ENTRY, 'init', '--queue', queue], { encoding: 'utf8' });
  assert.is(init.status, 0, init.stderr);
  return { work, queue };
}

export interface LoadedStart {
  status: number | null;
  stdout: string;
  stderr: string;
  /** The files loaded, absolute. */
  files: string[];
}

/** `fsjob ARGS` with `env` added to this process's (FSJOB_QUEUE unset), and the files it loaded. */
export function startLoading(work: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): LoadedStart {
  const log = join(work, `loaded-${Math.random().toString(36).slice(2)}.log`);
  writeFileSync(log, '');
  const run = spawnSync(process.execPath, ['--import', join(work, 'hook.mjs'), ENTRY, ...args], {
    encoding: 'utf8',
    env: { ...process.env, FSJOB_LOADED_LOG: log, FSJOB_QUEUE: '', ...env },
    timeout: 60_000,
  });
  const files = readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((url) => fileURLToPath(url));
  return { status: run.status, stdout: run.stdout, stderr: run.stderr, files };
}
