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
import { fileURLToPath, pathToFileURL } from 'node:url';
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

/** One call of the built CLI's main() in startsInOneProcess: what it printed and the files it loaded that no call before it had. */
export interface MainCall {
  argv: string[];
  status: number;
  stdout: string;
  stderr: string;
  /** The files this call loaded first, absolute. */
  files: string[];
}

/**
 * Calls the built CLI's main() (dist/bin/chunks/main.js, as bin/fsjob.js
 * does, the suite's command loaded from dist/conformance/) once for each
 * argv, one after the other in one process under the loader hook: a start
 * per call would cost the suite a node start each. A module once loaded is
 * not loaded again, so each call's `files` are those it loaded first, and
 * what all calls loaded is `base` (what importing main.js loaded) and the
 * calls' `files` together.
 */
export function mainCallsLoading(work: string, calls: readonly (readonly string[])[]): { base: string[]; calls: MainCall[] } {
  const log = join(work, `loaded-${Math.random().toString(36).slice(2)}.log`);
  writeFileSync(log, '');
  const script = `
import { readFileSync } from 'node:fs';
const log = process.env.FSJOB_LOADED_LOG;
const main = new URL('dist/bin/chunks/main.js', ${JSON.stringify(pathToFileURL(ROOT).href)});
const suite = new URL('../../conformance/runner/command.js', main).href;
const cli = await import(main.href);
const loaded = () => readFileSync(log, 'utf8').split('\\n').filter((line) => line !== '');
const base = loaded();
const calls = [];
for (const argv of JSON.parse(process.env.FSJOB_CALLS)) {
  const before = loaded().length;
  let stdout = '';
  let stderr = '';
  const io = { stdout: (text) => void (stdout += text), stderr: (text) => void (stderr += text) };
  // yargs prints help with console.log.
  console.log = (...parts) => io.stdout(parts.join(' ') + '\\n');
  console.error = (...parts) => io.stderr(parts.join(' ') + '\\n');
  const status = await cli.main(argv, io, { conformance: async () => (await import(suite)).conformanceCommand });
  calls.push({ argv, status, stdout, stderr, files: loaded().slice(before) });
}
process.stdout.write(JSON.stringify({ base, calls }));
`;
  const file = join(work, `calls-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(file, script);
  const run = spawnSync(process.execPath, ['--import', join(work, 'hook.mjs'), file], {
    encoding: 'utf8',
    env: { ...process.env, FSJOB_LOADED_LOG: log, FSJOB_CALLS: JSON.stringify(calls), FSJOB_QUEUE: '' },
    timeout: 120_000,
  });
  assert.is(run.status, 0, run.stderr);
  const out = JSON.parse(run.stdout) as { base: string[]; calls: MainCall[] };
  return { base: out.base.map((url) => fileURLToPath(url)), calls: out.calls.map((call) => ({ ...call, files: call.files.map((url) => fileURLToPath(url)) })) };
}
