/**
 * Few file descriptors (issue 19 point 5).
 *
 * - Every command started under `ulimit -n 32` either works or says, in one
 *   line without a stack trace, that no descriptor is left and what the limit
 *   is (node itself starts with ~20; loading the CLI opens module files in
 *   parallel).
 * - A worker whose limit drops under what it holds while its command runs
 *   (prlimit on the live process, to 3: stdin, stdout and stderr) cannot prove
 *   the command's group stopped nor publish the receipt; it backs off, names
 *   the limit in its log, keeps the job (no receipt, no second start, never
 *   `lost`), and once it has descriptors again finishes it itself: succeeded,
 *   one attempt, one start.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanupAll, freshDir, mkfifo } from '../support/helpers.ts';
import { receiptOf, waitFor } from '../support/consumer.ts';
import { assertNoCrash, FSJOB_ARGV, fsjobCli, fsjobSpawn, queueAndCwd } from '../support/faults.ts';

const LIMIT = 32;

function setNoFile(pid: number, soft: number): void {
  const done = spawnSync('prlimit', ['--pid', String(pid), `--nofile=${soft}:`], { encoding: 'utf8' });
  if (done.status !== 0) throw new Error(`prlimit failed: ${done.stderr}`);
}

const start = suite('hostile: every command under ulimit -n 32');
start.after(cleanupAll);

start('each command works or says in one line that the limit of 32 descriptors is reached', async () => {
  const { queue, cwd } = await queueAndCwd('fsjob-nofile-start');
  const id = fsjobCli(['enqueue', '--queue', queue.root, '--cwd', cwd, '--', 'true']).stdout.trim();
  const commands: string[][] = [
    ['init', '--queue', join(cwd, 'other')],
    ['enqueue', '--queue', queue.root, '--cwd', cwd, '--', 'true'],
    ['status', '--queue', queue.root],
    ['status', '--queue', queue.root, id],
    ['wait', '--queue', queue.root, '--timeout', '1s', id],
    ['logs', '--queue', queue.root, id],
    ['cancel', '--queue', queue.root, id],
    ['gc', '--queue', queue.root, '--all', '--dry-run'],
    ['recover', '--queue', queue.root],
    ['work', '--queue', queue.root, '--drain'],
    ['validate', queue.root],
    ['conformance', '--help'],
    ['--help'],
  ];
  for (const args of commands) {
    const done = spawnSync('sh', ['-c', `ulimit -n ${LIMIT} && exec "$@"`, 'sh', ...FSJOB_ARGV, ...args], { encoding: 'utf8', cwd, timeout: 120_000 });
    const run = { status: done.status, signal: done.signal, stdout: done.stdout ?? '', stderr: done.stderr ?? '' };
    const what = `ulimit -n ${LIMIT}; fsjob ${args.join(' ')}`;
    assertNoCrash(run, what);
    assert.not.match(run.stderr, /Cannot find module/, `${what}: no misleading loader error`);
    if (run.status !== 0 && !(args[0] === 'wait' && run.status === 75)) {
      assert.is(run.status, 1, `${what}: exit ${String(run.status)}: ${run.stderr}`);
      assert.match(run.stderr, new RegExp(`EMFILE.*ulimit -n ${LIMIT}`), `${what} names the limit: ${run.stderr}`);
      assert.is(run.stderr.trim().split('\n').length, 1, `${what}: one line`);
    }
  }
});

const midRun = suite('hostile: a worker that runs out of descriptors mid-run');
midRun.after(cleanupAll);

midRun('it backs off, names the limit, keeps the job, and finishes it itself once it has descriptors again', async () => {
  const { queue, cwd } = await queueAndCwd('fsjob-nofile-run');
  const dir = await freshDir('fsjob-nofile-barrier');
  const barrier = join(dir, 'go');
  const starts = join(dir, 'starts');
  mkfifo(barrier);
  const id = fsjobCli(['enqueue', '--queue', queue.root, '--cwd', cwd, '--', 'sh', '-c', `echo start >> ${starts}; read x < ${barrier}; echo done`]).stdout.trim();
  // A lease far longer than the fault: the owner may keep trying for all of it (RCPT-7).
  const worker = fsjobSpawn(['work', '--queue', queue.root, '--lease', '300']);
  try {
    const pid = worker.child.pid as number;
    await waitFor('the command to start', () => existsSync(queue.paths.jobFile(id, 'exec.1.json')), 90_000);
    setNoFile(pid, 3);
    spawn('sh', ['-c', `echo go > ${barrier}`], { stdio: 'ignore' });
    await waitFor('the log to say what is pending', () => new RegExp(`pending ${id} `).test(worker.output().stderr), 60_000);
    await waitFor('the log to name the limit', () => /no file descriptor left \(EMFILE\): .*ulimit -n 3\b/.test(worker.output().stderr), 60_000);
    assert.not.ok(existsSync(queue.paths.jobFile(id, 'receipt.json')), 'nothing was published without descriptors');
    const status = fsjobCli(['status', '--queue', queue.root, id]);
    assert.match(status.stdout, /^status\s+running \(owner alive/m, 'the job is still its owner\'s');
    setNoFile(pid, 1024);
    await waitFor('the receipt', () => existsSync(queue.paths.jobFile(id, 'receipt.json')), 90_000);
    const receipt = receiptOf(queue, id);
    assert.equal([receipt.outcome, receipt.gen, receipt.attempts], ['succeeded', 1, 1], 'its own owner finished it');
    assert.is(receipt.stdout?.bytes_kept, 5, 'with its output');
    assert.is(readFileSync(starts, 'utf8'), 'start\n', 'started exactly once');
    worker.child.kill('SIGTERM');
    const run = await worker.done;
    assertNoCrash(run, 'fsjob work');
    assert.is(run.status, 0, run.stderr);
    assert.not.match(run.stderr, /unfinished/, 'no job was left');
    assert.is(fsjobCli(['validate', queue.root]).status, 0);
  } finally {
    worker.child.kill('SIGKILL');
  }
});

start.run();
midRun.run();
