/**
 * A receipt that cannot be written (issue 19 point 10): the disk fills after
 * a job's command started, so when it exits 0 its owner can publish nothing.
 * The owner tries again while its lease holds (RCPT-7); the worker's log says
 * at once what is pending and why, `fsjob status` says the command ended and
 * the receipt is pending, and once the worker gives up it says which job it
 * leaves unfinished: `work --drain` (and a worker stopped by SIGTERM) then
 * exits 1. Once space is free and the worker is gone, recover ends the job
 * with exactly one receipt (lost, RECOV-1) and validate finds no error.
 *
 * The command waits on a FIFO outside the queue (a barrier), so the disk is
 * full before it ends, whatever the scheduling.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanupAll, freshDir, mkfifo } from '../support/helpers.ts';
import { receiptOf, waitFor } from '../support/consumer.ts';
import { assertNoCrash, fillUp, freeUp, fsjobCli, fsjobSpawn, mountTmpfs, queueAndCwd } from '../support/faults.ts';

const MIB = 1024 * 1024;
const LEASE_S = 3;

async function setup(label: string) {
  const fsys = await mountTmpfs(8 * MIB, label);
  if (fsys === null) return null;
  const { queue, cwd } = await queueAndCwd(label, fsys.dir);
  const barrier = join(await freshDir(`${label}-barrier`), 'go');
  mkfifo(barrier);
  const enqueued = fsjobCli(['enqueue', '--queue', queue.root, '--cwd', cwd, '--', 'sh', '-c', `read x < ${barrier}; echo done`]);
  assert.is(enqueued.status, 0, enqueued.stderr);
  return { fsys, queue, barrier, id: enqueued.stdout.trim() };
}

/** Lets the command end: it reads one line from the barrier. */
function release(barrier: string): void {
  spawn('sh', ['-c', `echo go > ${barrier}`], { stdio: 'ignore' });
}

type Setup = NonNullable<Awaited<ReturnType<typeof setup>>>;
type Spawned = ReturnType<typeof fsjobSpawn>;

/**
 * A worker (`fsjob work <args>`) runs the job; once its command started the
 * disk is filled and the command let go. `body` gets `freeSpace` to end the
 * fault; everything is cleaned up afterwards.
 */
async function withFullDisk(label: string, args: string[], body: (s: Setup, worker: Spawned, freeSpace: () => Promise<void>) => Promise<void>): Promise<void> {
  const s = await setup(label);
  if (s === null) return;
  let filler: string | undefined;
  const freeSpace = async (): Promise<void> => {
    if (filler !== undefined) await freeUp(filler);
    filler = undefined;
  };
  const worker = fsjobSpawn(['work', '--queue', s.queue.root, ...args]);
  try {
    await waitFor('the command to start', () => existsSync(s.queue.paths.jobFile(s.id, 'exec.1.json')), 90_000);
    filler = await fillUp(s.fsys.dir);
    release(s.barrier);
    await body(s, worker, freeSpace);
  } finally {
    worker.child.kill('SIGKILL');
    await freeSpace();
    s.fsys.unmount();
  }
}

const receipts = suite('hostile: a receipt that cannot be written');
receipts.after(cleanupAll);

receipts('a serving worker logs what is pending and why, status says so, and SIGTERM exits 1 naming the job it leaves', () =>
  withFullDisk('fsjob-rcpt-serve', ['--lease', String(LEASE_S)], async (s, worker, freeSpace) => {
    await waitFor('the log to say the receipt is pending', () => /pending .*publishing its receipt was refused: .*ENOSPC/.test(worker.output().stderr), 60_000);
    const status = fsjobCli(['status', '--queue', s.queue.root, s.id]);
    assertNoCrash(status, 'fsjob status');
    assert.match(status.stdout, /^status\s+running \(owner alive/m);
    assert.match(status.stdout, /^pending\s+the command has ended .*has not published the receipt/m, 'status says what is pending');
    const json = JSON.parse(fsjobCli(['status', '--queue', s.queue.root, '--json', s.id]).stdout) as { pending: string | null };
    assert.type(json.pending, 'string', 'status --json carries it too');
    await waitFor('the worker to give the job up', () => new RegExp(`unfinished ${s.id} .*ENOSPC`).test(worker.output().stderr), 60_000);
    assert.not.ok(existsSync(s.queue.paths.jobFile(s.id, 'receipt.json')), 'nothing was published');
    worker.child.kill('SIGTERM');
    const run = await worker.done;
    assertNoCrash(run, 'fsjob work');
    assert.is(run.status, 1, `a worker that leaves a job unfinished exits 1: ${run.stderr}`);
    assert.match(run.stdout, new RegExp(`unfinished \\(claims left open\\): ${s.id}`));
    await freeSpace();
    assertFinishedOnce(s.queue.root, s.id);
  }),
);

receipts('work --drain exits 1 when it leaves a job whose receipt it could not write', () =>
  withFullDisk('fsjob-rcpt-drain', ['--drain', '--lease', String(LEASE_S)], async (s, worker, freeSpace) => {
    const run = await worker.done;
    assertNoCrash(run, 'fsjob work --drain');
    assert.is(run.status, 1, `drain exits 1: ${run.stderr}`);
    assert.match(run.stderr, new RegExp(`pending ${s.id} .*ENOSPC`));
    assert.match(run.stderr, new RegExp(`unfinished ${s.id} `));
    await freeSpace();
    assertFinishedOnce(s.queue.root, s.id);
  }),
);

// A lease long enough that freeing the space always falls inside it (LEASE_MAX is 3600 s).
receipts('space freed within the lease: the owner publishes its own receipt (succeeded), no recovery needed', () =>
  withFullDisk('fsjob-rcpt-freed', ['--drain', '--lease', '600'], async (s, worker, freeSpace) => {
    await waitFor('the log to say the receipt is pending', () => /pending .*ENOSPC/.test(worker.output().stderr), 60_000);
    await freeSpace();
    const run = await worker.done;
    assertNoCrash(run, 'fsjob work --drain');
    assert.is(run.status, 0, run.stderr);
    const receipt = receiptOf(s.queue, s.id);
    assert.equal([receipt.outcome, receipt.gen, receipt.attempts], ['succeeded', 1, 1], 'the owner finished its own job');
  }),
);

/** After the worker is gone: recover gives the job exactly one receipt (lost: the outcome died with its owner) and validate is clean. */
function assertFinishedOnce(root: string, id: string): void {
  const recovered = fsjobCli(['recover', '--queue', root]);
  assertNoCrash(recovered, 'fsjob recover');
  assert.is(recovered.status, 0, recovered.stderr);
  const dir = join(root, 'jobs', id);
  assert.equal(readdirSync(dir).filter((name) => name === 'receipt.json'), ['receipt.json'], 'exactly one receipt');
  const receipt = JSON.parse(readFileSync(join(dir, 'receipt.json'), 'utf8')) as { outcome: string; reason: string | null; attempts: number };
  assert.equal([receipt.outcome, receipt.reason, receipt.attempts], ['lost', 'owner_lost', 1], 'the outcome died with the worker: lost, never run again');
  const validate = fsjobCli(['validate', root]);
  assert.is(validate.status, 0, validate.stdout);
}

receipts.run();
