/**
 * FS-2's probe (src/fs/probe.ts) on a filesystem that can hold a queue but
 * is full or read-only right now (a tmpfs made by the test): `fsjob work`
 * and `init` fail with the plain IO error (errno ENOSPC or EROFS), not with
 * FS-2's "this filesystem cannot hold an fsjob queue", which names a tmpfs
 * unfit and sends the operator to move the queue; once space is freed and
 * the mount writable again, the same queue works.
 *
 * Needs root (mount); where mounting is refused the test prints a SKIP line.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue } from '../../src/model/queue.ts';
import { cleanupAll, rejectsWith } from '../support/helpers.ts';
import { receiptOf } from '../support/consumer.ts';
import { assertNoCrash, fillUp, freeUp, fsjobCli, mountTmpfs, queueAndCwd, remount } from '../support/faults.ts';

const MIB = 1024 * 1024;

const conditions = suite('the filesystem probe on a full or read-only filesystem');
conditions.after(cleanupAll);

conditions('a full or read-only tmpfs gives IO with its errno, not FS-2: the queue works once the condition is gone', async () => {
  const fsys = await mountTmpfs(2 * MIB, 'fsjob-probe-conditions');
  if (fsys === null) return;
  let filler: string | undefined;
  try {
    const { queue, cwd } = await queueAndCwd('fsjob-probe-conditions', fsys.dir);
    const id = (await enqueue(queue, { argv: ['true'] }, { cwd })).id;
    const work = (errno: string): void => {
      const run = fsjobCli(['work', '--drain', '--queue', queue.root, '--json']);
      assertNoCrash(run, `fsjob work on ${errno}`);
      assert.is(run.status, 1, run.stdout + run.stderr);
      const error = (JSON.parse(run.stdout) as { error: { code: string; errno?: string; clause?: string } }).error;
      assert.is(error.code, 'IO');
      assert.is(error.errno, errno);
      assert.is.not(error.clause, 'FS-2', `a ${errno} is no verdict on the filesystem: ${run.stdout}`);
    };

    filler = await fillUp(fsys.dir);
    work('ENOSPC');
    const refused = await rejectsWith(initQueue(join(fsys.dir, 'second')), 'IO', { errno: 'ENOSPC' });
    assert.is.not(refused.clause, 'FS-2');
    assert.not.ok(existsSync(join(fsys.dir, 'second', 'fsjob.json')), 'no queue record was published');
    await freeUp(filler);
    filler = undefined;

    remount(fsys.dir, true);
    work('EROFS');
    remount(fsys.dir, false);

    const drained = fsjobCli(['work', '--drain', '--queue', queue.root]);
    assert.is(drained.status, 0, drained.stderr);
    assert.is(receiptOf(queue, id).outcome, 'succeeded');
  } finally {
    if (filler !== undefined) await freeUp(filler);
    fsys.unmount();
  }
});

conditions.run();
