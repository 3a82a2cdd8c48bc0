/**
 * src/model/queue-dirs.ts: a queue's directories held open for the hot
 * paths. A directory replaced after its handle was opened is never followed
 * (the swap a check can no longer see, src/fs/open-dir.ts): the queue's
 * operations go on in the directory they checked until the handles are
 * opened afresh, at most ANCESTOR_TRUST_MS later, and then the replacement
 * is refused as SEC-2 and LAYOUT-10 ask.
 */
import { readdirSync, renameSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ANCESTOR_TRUST_MS, heldHandles } from '../../src/fs/safefs.ts';
import { enqueue } from '../../src/producer/index.ts';
import { cleanupAll, freshDir, rejectsWith } from '../support/helpers.ts';
import { freshQueue } from '../support/producer.ts';

const swap = suite('held queue directories (SEC-2, LAYOUT-10)');
swap.after(cleanupAll);

if (!heldHandles()) {
  swap('every case (skipped: no /proc/self/fd here; the queue is named by paths and checked per call)', () => undefined);
} else {
  swap('jobs/ swapped for a symlink: enqueue never writes through it; once the handles are renewed the queue is refused', async () => {
    const queue = await freshQueue();
    const outside = await freshDir('queue-dirs-out');
    const first = await enqueue(queue, { handler: 'h' });
    const jobs = queue.paths.dir('jobs');
    renameSync(jobs, join(queue.root, 'jobs.real'));
    symlinkSync(outside, jobs);
    // Within ANCESTOR_TRUST_MS of the handles' opening: the checked jobs/ is used, wherever it is now.
    // (A machine that stalled past it refuses the job instead: either way nothing goes through the link.)
    const second = await enqueue(queue, { handler: 'h' }).catch((error: unknown) => error as Error);
    assert.equal(readdirSync(outside), [], 'nothing was published through the planted link');
    if (!(second instanceof Error)) assert.equal(readdirSync(join(queue.root, 'jobs.real')).sort(), [first.id, second.id].sort());
    await sleep(ANCESTOR_TRUST_MS + 100);
    await rejectsWith(enqueue(queue, { handler: 'h' }), 'SYMLINK_REFUSED', { clause: 'SEC-2', path: jobs });
    assert.equal(readdirSync(outside), []);
  });
}

swap.run();
