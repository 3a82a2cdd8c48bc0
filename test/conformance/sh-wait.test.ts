/**
 * fsjob-sh's `wait` (conformance/impls/sh/lib/control.sh cmd_wait): the tool a
 * shell user calls after `fsjob-sh produce`. It prints the receipt's outcome
 * and exits with the job's exit code (EXEC-10), 75 when its timeout passes
 * first, 1 for a receipt that fails REC-4's checks (SEC-10), 4 for no such job, 2 for an id
 * that is not one (LAYOUT-4) -- on jobs of fsjob-sh and of the reference.
 */
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { FSJOB_BIN } from '../support/cli.ts';
import { runSh as sh, SH_WATCHDOG_MS as WATCHDOG_MS, shTestDirs } from '../support/fsjob-sh.ts';

const wait = suite('fsjob-sh wait');
const dir = shTestDirs(wait, 'fsjob-sh-wait');

function request(name: string, value: unknown): string {
  const file = path.join(dir(), `${name}.json`);
  writeFileSync(file, `${JSON.stringify(value)}\n`);
  return file;
}

wait('prints the outcome and exits with the exit code; 75 while unfinished; 2 for a non-id', () => {
  const queue = path.join(dir(), 'q');
  assert.is(sh('init', queue).status, 0);
  const id = sh('produce', queue, request('r', { argv: ['sh', '-c', 'exit 3'], cwd: dir() })).stdout.trim();
  const early = sh('wait', queue, id, '0');
  assert.is(early.status, 75, early.stderr);
  assert.is(sh('consume', queue).status, 0);
  const done = sh('wait', queue, id);
  assert.is(done.status, 3, done.stderr);
  assert.is(done.stdout, `${id} failed (exit code 3)\n`);
  assert.is(sh('wait', queue, '../jobs').status, 2);
  assert.is(sh('wait', queue, '1796126604134694430-d26ea0712362ddd0', '1').status, 4, 'no such job (src/cli/exit.ts)');
});

wait('reads a receipt the reference wrote, and refuses an invalid one', () => {
  const queue = path.join(dir(), 'q');
  const run = (...args: string[]): string => {
    const result = spawnSync(process.execPath, [FSJOB_BIN, ...args], { encoding: 'utf8', timeout: WATCHDOG_MS });
    assert.is(result.status, 0, result.stderr);
    return result.stdout.trim();
  };
  run('init', '--queue', queue);
  const id = run('enqueue', '--queue', queue, '--request', request('ok', { argv: ['true'], cwd: dir() }));
  run('work', '--queue', queue, '--drain');
  const done = sh('wait', queue, id, '5');
  assert.is(done.status, 0, done.stderr);
  assert.is(done.stdout, `${id} succeeded (exit code 0)\n`);
  const receipt = path.join(queue, 'jobs', id, 'receipt.json');
  rmSync(receipt);
  writeFileSync(receipt, '{"fsjob":"1.0","type":"receipt"}\n', { mode: 0o600 });
  const damaged = sh('wait', queue, id, '5');
  assert.is(damaged.status, 1);
  assert.match(damaged.stderr, /receipt is invalid/);
});

wait.run();
