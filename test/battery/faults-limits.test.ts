/**
 * Reliability battery, faults of the process (issue 6): no file descriptor
 * left (a real RLIMIT_NOFILE lowered on a running `fsjob` with prlimit: Node
 * itself needs dozens of descriptors to start, so the limit is lowered after
 * start-up, to exactly what the process holds) and no permission (EACCES: root
 * bypasses permission checks, so fsjob runs as nobody through setpriv).
 * Each gives a clear error, corrupts nothing, and once the fault is removed
 * recover + drain give every accepted job exactly one receipt.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, chownSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue } from '../../src/model/queue.ts';
import { QueuePaths } from '../../src/model/layout.ts';
import { cleanupAll, freshDir, NOBODY } from '../support/helpers.ts';
import { receiptOf, waitFor } from '../support/consumer.ts';
import { AS_NOBODY, assertNoCrash, queueAndCwd, assertNothingLost, auditErrors, fsjobCli, fsjobSpawn, jobIds, nobodyCannotRun } from '../support/faults.ts';

/** Sets the soft RLIMIT_NOFILE of a running process (the hard limit stays: lowering it could not be undone). */
function setNoFile(pid: number, soft: number | 'restore'): void {
  const limit = soft === 'restore' ? '1024:' : `${soft}:`;
  const done = spawnSync('prlimit', ['--pid', String(pid), `--nofile=${limit}`], { encoding: 'utf8' });
  if (done.status !== 0) throw new Error(`prlimit failed: ${done.stderr}`);
}

/** The lowest descriptor number `pid` does not use: a soft limit of it leaves no descriptor to open. */
function noRoomLimit(pid: number): number {
  const used = new Set(readdirSync(`/proc/${pid}/fd`).map(Number));
  let free = 0;
  while (used.has(free)) free++;
  return free;
}

const emfile = suite('EMFILE: no file descriptor left');
emfile.after(cleanupAll);

emfile('a worker out of descriptors gives each claimed job back (released, uncounted), corrupts nothing, and the jobs run once it has them again', async () => {
  const { queue, cwd } = await queueAndCwd('fsjob-emfile');
  const worker = fsjobSpawn(['work', '--queue', queue.root]);
  try {
    const pid = worker.child.pid as number;
    await waitFor('the worker to register', () => readdirSync(queue.paths.dir('workers')).some((name) => name.endsWith('.json')), 90_000);
    setNoFile(pid, noRoomLimit(pid));
    const ids = [(await enqueue(queue, { argv: ['sh', '-c', 'echo one'] }, { cwd })).id, (await enqueue(queue, { argv: ['sh', '-c', 'echo two'] }, { cwd })).id];
    await waitFor('EMFILE to be reported', () => /EMFILE/.test(worker.output().stderr), 90_000);
    assert.equal(await auditErrors(queue), [], 'nothing on disk is corrupt while descriptors run out');
    for (const id of ids) assert.not.ok(existsSync(queue.paths.jobFile(id, 'receipt.json')), 'no job was finished without running');
    setNoFile(pid, 'restore');
    worker.child.kill('SIGTERM');
    const run = await worker.done;
    assertNoCrash(run, 'fsjob work');
    assert.is(run.status, 0, run.stderr);
    await assertNothingLost(queue, ids);
    for (const id of ids) {
      const receipt = receiptOf(queue, id);
      assert.is(receipt.outcome, 'succeeded');
      assert.is(receipt.attempts, 1, 'the attempts that could not start were not counted (EXEC-3)');
    }
  } finally {
    worker.child.kill('SIGKILL');
  }
});

emfile('a producer out of descriptors refuses that one job with IO/EMFILE, leaves nothing of it, and accepts the next once it has them again', async () => {
  const queue = await initQueue(join(await freshDir('fsjob-emfile-p'), 'q'));
  const producer = fsjobSpawn(['enqueue', '--queue', queue.root, '--batch', '-']);
  try {
    const pid = producer.child.pid as number;
    const stdin = producer.child.stdin;
    assert.ok(stdin !== null);
    const line = (n: number): string => `${JSON.stringify({ argv: ['sh', '-c', `echo ${n}`], cwd: '/' })}\n`;
    stdin.write(line(1));
    await waitFor('the first id', () => /^\S+\n/.test(producer.output().stdout), 90_000);
    setNoFile(pid, noRoomLimit(pid));
    stdin.write(line(2));
    await waitFor('the second line to fail', () => /line 2: .*EMFILE/.test(producer.output().stderr), 90_000);
    assert.equal(readdirSync(queue.paths.dir('tmp')), [], 'the refused job left no staging (ENQ-6)');
    setNoFile(pid, 'restore');
    stdin.end(line(3));
    const run = await producer.done;
    assertNoCrash(run, 'fsjob enqueue --batch');
    assert.is(run.status, 1, 'a batch with a refused line exits 1');
    const accepted = run.stdout.trim().split('\n');
    assert.is(accepted.length, 2, `lines 1 and 3 were accepted: ${run.stdout}`);
    assert.equal(jobIds(queue), [...accepted].sort(), 'no trace of line 2 in jobs/');
    await assertNothingLost(queue, accepted);
  } finally {
    producer.child.kill('SIGKILL');
  }
});

emfile.run();

/** A queue owned by nobody, made by `fsjob init` run as nobody (root may not open it: SEC-1), and its paths. */
async function nobodysQueue(label: string): Promise<{ root: string; paths: QueuePaths }> {
  const dir = await freshDir(label);
  chownSync(dir, NOBODY, NOBODY);
  const root = join(dir, 'q');
  const init = fsjobCli(['init', '--queue', root], { prefix: AS_NOBODY });
  assert.is(init.status, 0, init.stderr);
  return { root, paths: new QueuePaths(root) };
}

const eacces = suite('EACCES: a queue the process may not read or write');
eacces.after(cleanupAll);

const nobodyBlocked = nobodyCannotRun();
if (nobodyBlocked !== undefined) console.log(`faults-limits EACCES: skipped, ${nobodyBlocked}`);

eacces('a queue owned by another user is refused as a whole (SEC-1), for reading and writing', async () => {
  if (nobodyBlocked !== undefined) return;
  const queue = await initQueue(join(await freshDir('fsjob-eacces-root'), 'q'));
  chmodSync(join(queue.root, '..'), 0o755); // nobody may reach the root: the refusal must come from fsjob, not from the path
  const id = (await enqueue(queue, { argv: ['true'] }, { cwd: '/' })).id;
  for (const args of [['status'], ['enqueue'], ['work', '--drain']]) {
    const run = fsjobCli([...args, '--queue', queue.root, ...(args[0] === 'enqueue' ? ['--', 'true'] : [])], { prefix: AS_NOBODY });
    assertNoCrash(run, `fsjob ${args[0]} as nobody`);
    assert.is(run.status, 1, `fsjob ${args[0]} as nobody exits 1: ${run.stderr}`);
    assert.match(run.stderr, /owned by uid 0, not 65534/, `fsjob ${args[0]} names the ownership problem: ${run.stderr}`);
  }
  const validate = fsjobCli(['validate', queue.root], { prefix: AS_NOBODY });
  assertNoCrash(validate, 'fsjob validate as nobody');
  assert.is(validate.status, 2, `validate cannot audit a root SEC-1 refuses (REPORT-1): ${validate.stdout}${validate.stderr}`);
  assert.equal(readdirSync(queue.paths.job(id)), ['spec.json'], 'nobody wrote anything');
  await assertNothingLost(queue, [id]);
});

eacces('a job directory its owner made unwritable, then unreadable: the job is left untouched with a clear error, and runs once the modes are restored', async () => {
  if (nobodyBlocked !== undefined) return;
  const queue = await nobodysQueue('fsjob-eacces-job');
  const enq = (): ReturnType<typeof fsjobCli> => fsjobCli(['enqueue', '--queue', queue.root, '--cwd', '/', '--', 'sh', '-c', 'echo hi'], { prefix: AS_NOBODY });
  const first = enq();
  assert.is(first.status, 0, first.stderr);
  const id = first.stdout.trim();
  const jobDir = queue.paths.job(id);
  for (const mode of [0o500, 0o000]) {
    chmodSync(jobDir, mode);
    const work = fsjobCli(['work', '--drain', '--queue', queue.root], { prefix: AS_NOBODY });
    assertNoCrash(work, `fsjob work on a job dir of mode ${mode.toString(8)}`);
    assert.is(work.status, 0, `the drain itself succeeds: ${work.stderr}`);
    assert.match(work.stderr, /EACCES/, `the refused job is reported with its errno: ${work.stderr}`);
    chmodSync(jobDir, 0o700);
    assert.equal(readdirSync(jobDir).filter((name) => !name.startsWith('.')), ['spec.json'], 'nothing was claimed or half-written');
    assert.equal(readdirSync(jobDir).filter((name) => name.startsWith('.')), [], 'no temporary file was left behind');
  }
  chmodSync(queue.paths.dir('jobs'), 0o500);
  const refused = enq();
  assertNoCrash(refused, 'fsjob enqueue into an unwritable jobs/');
  assert.is(refused.status, 1, refused.stderr);
  assert.match(refused.stderr, /EACCES/);
  chmodSync(queue.paths.dir('jobs'), 0o700);
  assert.equal(readdirSync(queue.paths.dir('tmp')), [], 'the refused enqueue left no staging (ENQ-6)');
  assert.equal(jobIds(queue), [id]);

  const work = fsjobCli(['work', '--drain', '--queue', queue.root], { prefix: AS_NOBODY });
  assert.is(work.status, 0, work.stderr);
  assert.match(readFileSync(queue.paths.jobFile(id, 'receipt.json'), 'utf8'), /"outcome":"succeeded"/);
  const validate = fsjobCli(['validate', queue.root], { prefix: AS_NOBODY });
  assert.is(validate.status, 0, `validate as the owner finds the queue clean: ${validate.stdout}`);
});

eacces.run();
