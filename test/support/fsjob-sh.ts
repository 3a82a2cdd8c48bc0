/**
 * Running fsjob-sh (conformance/impls/sh) in tests: its path, a call with a
 * watchdog, and a private temporary directory per test.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Test } from 'uvu';

export const FSJOB_SH = fileURLToPath(new URL('../../conformance/impls/sh/fsjob-sh', import.meta.url));
export const SH_WATCHDOG_MS = 120_000;

export interface ShRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** `fsjob-sh ARGS...`, killed after SH_WATCHDOG_MS. */
export function runSh(...args: string[]): ShRun {
  const result = spawnSync(FSJOB_SH, args, { encoding: 'utf8', timeout: SH_WATCHDOG_MS });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A fresh private (0700) directory for each test of `test`, removed after it; the returned function gives the current one. */
export function shTestDirs(test: Test, label: string): () => string {
  let dir = '';
  test.before.each(() => {
    dir = mkdtempSync(path.join(tmpdir(), `${label}-`));
    chmodSync(dir, 0o700);
  });
  test.after.each(() => rmSync(dir, { recursive: true, force: true }));
  return () => dir;
}
