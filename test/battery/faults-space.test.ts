/**
 * Reliability battery, faults of the filesystem itself (issue 6): a full disk
 * (ENOSPC on a size-limited tmpfs made by the test) and a read-only queue (the
 * same tmpfs remounted read-only). Each fault gives a clear FsjobError code
 * (IO with its errno), a failed enqueue leaves nothing behind, and nothing
 * accepted is lost once the fault is removed.
 *
 * Needs root (mount); where mounting is refused each test prints a SKIP line
 * saying why and passes without asserting anything.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { enqueue } from '../../src/producer/index.ts';
import type { Queue } from '../../src/model/queue.ts';
import { Worker } from '../../src/consumer/index.ts';
import { cleanupAll, rejectsWith } from '../support/helpers.ts';
import { receiptOf, waitFor } from '../support/consumer.ts';
import { assertNoCrash, assertNothingLost, queueAndCwd, auditErrors, fillUp, freeUp, fsjobCli, jobIds, mountTmpfs, remount } from '../support/faults.ts';
import type { ConsumerEvent } from '../../src/consumer/index.ts';

const MIB = 1024 * 1024;

/** The staging area and the index hold nothing of a job that was not accepted. */
function assertNoLeftovers(queue: Queue, accepted: readonly string[]): void {
  assert.equal(readdirSync(queue.paths.dir('tmp')), [], 'tmp/ is empty: the failed enqueue removed its staging (ENQ-6)');
  const ready = readdirSync(queue.paths.dir('ready')).filter((name) => !accepted.some((id) => name.endsWith(id)));
  assert.equal(ready, [], 'no ready entry of a job that was not accepted');
  assert.equal(jobIds(queue).filter((id) => !accepted.includes(id)), [], 'no job directory of a job that was not accepted');
}

const space = suite('ENOSPC: a full filesystem under the queue');
space.after(cleanupAll);

space('enqueue on a full disk fails with IO/ENOSPC and leaves nothing; a running job whose output and receipt cannot be written is finished once space frees', async () => {
  const fsys = await mountTmpfs(4 * MIB, 'fsjob-enospc');
  if (fsys === null) return;
  let filler: string | undefined;
  let stopWorker = async (): Promise<void> => undefined;
  try {
    const { queue, cwd } = await queueAndCwd('fsjob-enospc', fsys.dir);
    const go = join(cwd, 'go');
    // The job waits for the test to fill the disk, then writes 64 KiB of output that cannot be kept.
    const running = await enqueue(queue, { argv: ['sh', '-c', `while [ ! -e ${go} ]; do sleep 0.05; done; head -c 65536 /dev/zero; echo done >&2`] }, { cwd });
    const events: ConsumerEvent[] = [];
    const worker = new Worker({ queues: [queue], mode: 'serve', pollMs: 100, onEvent: (event) => events.push(event) });
    const served = worker.run();
    stopWorker = async () => {
      worker.stop();
      await served.catch(() => undefined);
    };
    await waitFor('the job to start', () => existsSync(queue.paths.jobFile(running.id, 'exec.1.json')));

    filler = await fillUp(fsys.dir);
    const refused = await rejectsWith(enqueue(queue, { argv: ['true'] }, { cwd }), 'IO', { errno: 'ENOSPC' });
    assert.ok(refused.path?.startsWith(queue.root), 'the error names the path that failed');
    assertNoLeftovers(queue, [running.id]);
    const cli = fsjobCli(['enqueue', '--queue', queue.root, '--', 'true']);
    assert.is(cli.status, 1, `fsjob enqueue exits 1 on ENOSPC: ${cli.stderr}`);
    assert.match(cli.stderr, /ENOSPC/);
    assertNoCrash(cli, 'fsjob enqueue');
    assertNoLeftovers(queue, [running.id]);

    writeFileSync(go, ''); // the job now writes into a full disk, and its receipt cannot be published
    await waitFor('the receipt to fail', () => events.some((e) => (e.type === 'error' || e.type === 'pending') && e.job_id === running.id && e.error?.code === 'IO' && e.error.errno === 'ENOSPC'));
    assert.not.ok(existsSync(queue.paths.jobFile(running.id, 'receipt.json')));

    await freeUp(filler);
    filler = undefined;
    await waitFor('the receipt once space is free', () => existsSync(queue.paths.jobFile(running.id, 'receipt.json')), 90_000);
    worker.stop();
    await served;
    const receipt = receiptOf(queue, running.id);
    assert.is(receipt.outcome, 'succeeded', 'the job is finished by its own owner, not lost');
    assert.is(receipt.gen, 1);
    assert.is(receipt.stdout?.bytes_total, 65536, 'every byte the command wrote was counted');
    assert.ok((receipt.stdout?.bytes_kept ?? 0) < 65536, 'bytes that did not fit were not kept');
    assert.is(receipt.stdout?.truncated, true, 'the receipt says the output is incomplete (RCPT-5)');
    await assertNothingLost(queue, [running.id]);
  } finally {
    if (filler !== undefined) await freeUp(filler);
    await stopWorker();
    fsys.unmount();
  }
});

space.run();

const readOnly = suite('a read-only queue');
readOnly.after(cleanupAll);

readOnly('enqueue and work fail with IO/EROFS; status and validate still read; once writable, nothing accepted is lost', async () => {
  const fsys = await mountTmpfs(8 * MIB, 'fsjob-erofs');
  if (fsys === null) return;
  try {
    const { queue, cwd } = await queueAndCwd('fsjob-erofs', fsys.dir);
    const accepted = [(await enqueue(queue, { argv: ['true'] }, { cwd })).id, (await enqueue(queue, { argv: ['sh', '-c', 'exit 3'] }, { cwd })).id];
    remount(fsys.dir, true);

    await rejectsWith(enqueue(queue, { argv: ['true'] }, { cwd }), 'IO', { errno: 'EROFS' });
    const cliEnqueue = fsjobCli(['enqueue', '--queue', queue.root, '--', 'true']);
    assert.is(cliEnqueue.status, 1, cliEnqueue.stderr);
    assert.match(cliEnqueue.stderr, /EROFS/);
    assertNoCrash(cliEnqueue, 'fsjob enqueue');

    await rejectsWith(new Worker({ queues: [queue], mode: 'drain', pollMs: 100 }).run(), 'IO', { errno: 'EROFS' });
    const cliWork = fsjobCli(['work', '--drain', '--queue', queue.root]);
    assertNoCrash(cliWork, 'fsjob work');
    assert.is(cliWork.status, 1, `fsjob work exits 1 on a read-only queue: ${cliWork.stderr}`);
    assert.match(cliWork.stderr, /EROFS/);

    const status = fsjobCli(['status', '--queue', queue.root]);
    assert.is(status.status, 0, status.stderr);
    for (const id of accepted) assert.ok(status.stdout.includes(id), 'status lists the queued jobs');
    const validate = fsjobCli(['validate', queue.root]);
    assert.is(validate.status, 0, `validate reads a read-only queue: ${validate.stdout}${validate.stderr}`);
    assert.equal(await auditErrors(queue), []);
    for (const id of accepted) assert.equal(readdirSync(queue.paths.job(id)), ['spec.json'], 'nothing was claimed');

    remount(fsys.dir, false);
    await assertNothingLost(queue, accepted);
    assert.is(receiptOf(queue, accepted[0] as string).outcome, 'succeeded');
    assert.is(receiptOf(queue, accepted[1] as string).outcome, 'failed');
  } finally {
    fsys.unmount();
  }
});

readOnly.run();
