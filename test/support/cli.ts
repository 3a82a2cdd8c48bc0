/**
 * Running the real `fsjob` command (bin/fsjob.js) as a child process: to
 * completion (`runFsjob`), or started and driven (`startFsjob`: read its
 * stderr as it comes, send it signals, close its pipes). Every wait has a
 * watchdog that kills the child and fails with what it printed; none is a
 * timing assertion.
 *
 * bin/fsjob.js runs the built dist/bin/fsjob.js when dist/ is built from the
 * sources as they are. Importing this module (helpers.ts and conformance.ts
 * do) makes dist/ current first, once per test process: a JavaScript-only
 * build, about a second, when a source changed since the last one, else a
 * stat of each input. Without it a stale dist/ would send every start
 * through tsx (a second or more each), and the conformance sweeps start
 * thousands. FSJOB_DIST_KEY then pins every fsjob the run starts to that
 * build, so a source edited during the run does not switch the rest of it
 * to tsx.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDist } from '../../tools/build/build.ts';
import { builtKey } from '../../tools/build/inputs.mjs';

/** The command in this checkout; spawn it with process.execPath. */
export const FSJOB_BIN = fileURLToPath(new URL('../../bin/fsjob.js', import.meta.url));

/**
 * The fsjob the helpers start: this checkout's, unless FSJOB_TEST_CLI names
 * another command line (words split on spaces, e.g. "node
 * /tmp/old/bin/fsjob.js"). Only tools/battery/before-after.ts sets it, to run
 * the hostile battery against an older main; npm test never does.
 */
export const FSJOB_ARGV: readonly string[] = otherCli(process.env['FSJOB_TEST_CLI']) ?? [process.execPath, FSJOB_BIN];

function otherCli(line: string | undefined): string[] | undefined {
  const words = (line ?? '').split(' ').filter((word) => word !== '');
  return words.length === 0 ? undefined : words;
}

await ensureDist({ types: false });
process.env['FSJOB_DIST_KEY'] = builtKey() ?? '';

// The start-up cache of the enqueues the tests make (src/cli/start-cache.ts) in a directory of this test process's, not in the
// user's home: the first enqueue writes it, the others run from it, as a user's do.
const startCache = mkdtempSync(join(tmpdir(), 'fsjob-test-cache-'));
process.env['XDG_CACHE_HOME'] = startCache;
process.on('exit', () => rmSync(startCache, { recursive: true, force: true }));
/** Generous: other suites load the machine; a healthy command takes about a second. */
export const CLI_WATCHDOG_MS = 90_000;

export interface CliRun {
  status: number;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  bytes: Buffer;
}

export interface CliOptions {
  cwd: string;
  input?: string;
  env?: Record<string, string | undefined>;
}

function envOf(options: CliOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, FSJOB_QUEUE: '' };
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return env;
}

/** `fsjob ...args` to completion. */
export function runFsjob(args: readonly string[], options: CliOptions): Promise<CliRun> {
  return startFsjob(args, options).result;
}

export interface StartedCli {
  child: ChildProcessWithoutNullStreams;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Resolves once stderr contains `text` (a string or a pattern); rejects after the watchdog. */
  waitForStderr(text: string | RegExp, what?: string): Promise<void>;
  result: Promise<CliRun>;
}

export function startFsjob(args: readonly string[], options: CliOptions): StartedCli {
  const [command, ...lead] = FSJOB_ARGV as [string, ...string[]];
  const child = spawn(command, [...lead, ...args], { cwd: options.cwd, env: envOf(options), stdio: ['pipe', 'pipe', 'pipe'] });
  const out: Buffer[] = [];
  let err = '';
  const listeners = new Set<() => void>();
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8');
    for (const listener of [...listeners]) listener();
  });
  // A test may close our ends on purpose (a real closed pipe): their errors are expected.
  child.stdout.on('error', () => undefined);
  child.stderr.on('error', () => undefined);
  child.stdin.on('error', () => undefined);
  child.stdin.end(options.input ?? '');
  const result = new Promise<CliRun>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`fsjob ${args.slice(0, 4).join(' ')} still running after ${CLI_WATCHDOG_MS} ms (watchdog); stderr: ${err.slice(-2000)}`));
    }, CLI_WATCHDOG_MS);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const bytes = Buffer.concat(out);
      resolve({ status: code ?? -1, signal, stdout: bytes.toString('utf8'), stderr: err, bytes });
    });
  });
  let exited = false;
  void result.then(
    () => (exited = true),
    () => (exited = true),
  );
  return {
    child,
    stderr: () => err,
    result,
    waitForStderr: (text, what) =>
      new Promise<void>((resolve, reject) => {
        const seen = (): boolean => (typeof text === 'string' ? err.includes(text) : text.test(err));
        if (seen()) return resolve();
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`fsjob ${args[0] ?? ''} never wrote ${what ?? String(text)} within ${CLI_WATCHDOG_MS} ms (watchdog); stderr: ${err.slice(-2000)}`));
        }, CLI_WATCHDOG_MS);
        const check = (): void => {
          if (!seen()) {
            if (exited) {
              clearTimeout(timer);
              listeners.delete(check);
              reject(new Error(`fsjob ${args[0] ?? ''} exited before writing ${what ?? String(text)}; stderr: ${err.slice(-2000)}`));
            }
            return;
          }
          clearTimeout(timer);
          listeners.delete(check);
          resolve();
        };
        listeners.add(check);
        void result.finally(check);
      }),
  };
}
