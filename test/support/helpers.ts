/**
 * Shared test fixtures: real temporary directories, assertions on FsjobError
 * codes, and a watchdog so a call that would hang fails the test instead of
 * wedging the run.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import * as assert from 'uvu/assert';
import { FsjobError } from '../../src/base/errors.ts';
import type { FsjobErrorCode } from '../../src/base/errors.ts';
// Every test that starts `fsjob` gets a current dist/ (see cli.ts).
import './cli.ts';

/** A fresh private (0700, ours) directory; removed by `cleanupAll`. */
const created: string[] = [];
export async function freshDir(label = 'fsjob'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `${label}-`));
  created.push(dir);
  return dir;
}

export async function cleanupAll(): Promise<void> {
  for (const dir of created.splice(0)) await rm(dir, { recursive: true, force: true });
}

/** Awaits `promise`, asserts it rejects with an FsjobError of `code`, returns the error. */
export async function rejectsWith(
  promise: Promise<unknown>,
  code: FsjobErrorCode,
  expect: { clause?: string; path?: string; errno?: string } = {},
): Promise<FsjobError> {
  let outcome: unknown;
  try {
    const value = await promise;
    outcome = { resolved: value };
  } catch (error) {
    outcome = error;
  }
  if (!(outcome instanceof FsjobError)) {
    assert.unreachable(`expected FsjobError ${code}, got ${outcome instanceof Error ? outcome.stack : JSON.stringify(outcome)}`);
    throw new Error('unreachable');
  }
  assert.is(outcome.code, code, `code (message: ${outcome.message})`);
  if (expect.clause !== undefined) assert.is(outcome.clause, expect.clause, 'clause');
  if (expect.path !== undefined) assert.is(outcome.path, expect.path, 'path');
  if (expect.errno !== undefined) assert.is(outcome.errno, expect.errno, 'errno');
  return outcome;
}

/**
 * Races `work` against a deadline. On timeout `unblock` runs (e.g. opens the
 * FIFO's other end so a stuck thread-pool open returns) and the test fails.
 */
export async function withWatchdog<T>(ms: number, work: Promise<T>, unblock: () => void = () => undefined): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      unblock();
      reject(new Error(`watchdog: still blocked after ${ms} ms`));
    }, ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

export function mkfifo(path: string): void {
  execFileSync('mkfifo', ['-m', '0600', path]);
}

/** Names in `dir` that start with "." (temp files a publish might leave). */
export async function dotFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((name) => name.startsWith('.'));
}

export const NOBODY = 65534;
