/**
 * Shared by the tests of the Python implementation (python/): which
 * interpreter to use, and running a program to completion under a watchdog
 * (a hang guard that kills it and fails with what it printed, never a
 * timing assertion).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const PYTHON_DIR = fileURLToPath(new URL('../../python/', import.meta.url));
/** The conformance launcher: `python3 -m fsjob` from python/ (conformance/impls/python/fsjob-py). */
export const FSJOB_PY = fileURLToPath(new URL('../../conformance/impls/python/fsjob-py', import.meta.url));
export const PY_MANIFEST = fileURLToPath(new URL('../../conformance/impls/python/manifest.json', import.meta.url));

/**
 * FSJOB_PYTHON, else /usr/bin/python3 (the launcher's choice too: a version
 * manager's shim on PATH costs a second or more per start on a loaded host),
 * else python3 from PATH.
 */
export const PYTHON = process.env['FSJOB_PYTHON'] ?? (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');

export interface Run {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** `program ...args` to completion; killed (and the result says so) after `watchdogMs`. */
export function run(program: string, args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string; watchdogMs: number }): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { cwd: options.cwd ?? REPO, env: options.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => {
      stderr += `\n[watchdog: killed after ${options.watchdogMs} ms]`;
      child.kill('SIGKILL');
    }, options.watchdogMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

/** Python code run with the package importable (python/ on sys.path). */
export function python(code: string, args: readonly string[], watchdogMs: number): Promise<Run> {
  return run(PYTHON, ['-S', '-c', code, ...args], { env: { ...process.env, PYTHONPATH: PYTHON_DIR }, watchdogMs });
}
