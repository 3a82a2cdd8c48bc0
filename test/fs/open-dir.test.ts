/**
 * src/fs/open-dir.ts: a directory checked once when its handle is opened,
 * every call of the visit resolved inside it. The swap a check can no
 * longer see (the directory replaced after the check) is forced here: the
 * visit goes on in the directory it checked, nothing goes through the
 * replacement, and the next visit refuses it.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OpenDir, heldHandles } from '../../src/fs/safefs.ts';
import { FsjobError } from '../../src/base/errors.ts';
import { cleanupAll, freshDir, mkfifo, rejectsWith } from '../support/helpers.ts';

const held = suite('a held directory handle (SEC-2, SEC-5, SEC-6 once per visit)');
held.after(cleanupAll);

/** A queue-like root with jobs/j1/, its handles open, and a directory outside it. */
async function visit(): Promise<{ root: string; jobs: OpenDir; job: OpenDir; outside: string }> {
  const root = await freshDir('open-dir-q');
  const outside = await freshDir('open-dir-out');
  mkdirSync(join(root, 'jobs', 'j1'), { recursive: true, mode: 0o700 });
  const jobs = OpenDir.root(root, { root }).openChild('jobs');
  return { root, jobs, job: jobs.openChild('j1'), outside };
}

function throwsCode(call: () => unknown, code: string, clause?: string): FsjobError {
  try {
    call();
  } catch (error) {
    assert.instance(error, FsjobError);
    const failure = error as FsjobError;
    assert.is(failure.code, code, failure.message);
    if (clause !== undefined) assert.is(failure.clause, clause);
    return failure;
  }
  assert.unreachable(`expected ${code}`);
  throw new Error('unreachable');
}

const skip = (name: string, reason: string): void => held(`${name} (skipped: ${reason})`, () => undefined);

if (!heldHandles()) {
  skip('every case', 'this system has no /proc/self/fd that resolves names: handles are named by their paths and checked per call (chain.ts, test/fs/seam.test.ts)');
} else {
  held('a job directory swapped for a symlink after its check: the visit writes into the directory it checked, nothing reaches the link target, the next visit refuses the link', async () => {
    const { root, jobs, job, outside } = await visit();
    renameSync(join(root, 'jobs', 'j1'), join(root, 'jobs', 'moved'));
    symlinkSync(outside, join(root, 'jobs', 'j1'));
    await job.publish('claim.1.json', '{}\n', 'link', { lookFirst: false });
    assert.equal(readdirSync(outside), [], 'nothing was written through the planted link');
    assert.is(readFileSync(join(root, 'jobs', 'moved', 'claim.1.json'), 'utf8'), '{}\n');
    assert.equal(await job.list(), [{ name: 'claim.1.json', kind: 'file' }], 'the listing is of the checked directory too');
    // Messages keep naming the directory where the visit found it.
    assert.is(job.entry('claim.1.json'), join(root, 'jobs', 'j1', 'claim.1.json'));
    job.close();
    // SEC-10: a symlinked job directory is refused (left alone) by every later visit.
    throwsCode(() => jobs.openChild('j1'), 'SYMLINK_REFUSED', 'SEC-2');
  });

  held('a directory whose mode was widened after its check is refused when it is opened again (SEC-5)', async () => {
    const { root, jobs, job } = await visit();
    job.close();
    chmodSync(join(root, 'jobs', 'j1'), 0o770);
    throwsCode(() => jobs.openChild('j1'), 'UNSAFE_MODE', 'SEC-5');
  });

  held('a FIFO or a file where a directory belongs is refused without blocking (SEC-3)', async () => {
    const { root, jobs } = await visit();
    mkfifo(join(root, 'jobs', 'fifo'));
    writeFileSync(join(root, 'jobs', 'file'), 'x', { mode: 0o600 });
    throwsCode(() => jobs.openChild('fifo'), 'NOT_REGULAR', 'SEC-3');
    throwsCode(() => jobs.openChild('file'), 'NOT_REGULAR', 'SEC-3');
    throwsCode(() => jobs.openChild('none'), 'NOT_FOUND');
  });

  held('a closed handle names nothing: its descriptor number may be another file by now', async () => {
    const { job } = await visit();
    job.close();
    job.close();
    await rejectsWith(job.publish('a.json', '{}\n', 'link'), 'USAGE');
    throwsCode(() => job.at('a.json'), 'USAGE');
  });

  held('a failure inside a held directory names the directory, not the descriptor path the call used', async () => {
    const { root, job } = await visit();
    rmdirSync(join(root, 'jobs', 'j1'));
    const error = await rejectsWith(job.publish('a.json', '{}\n', 'link'), 'IO', { errno: 'ENOENT' });
    assert.ok(error.message.includes(join(root, 'jobs', 'j1')), error.message);
    assert.not.ok(error.message.includes('/proc/self/fd'), error.message);
  });

  held('makeChild makes a private directory (PUB-8) and refuses a taken name without touching it', async () => {
    const { root, jobs } = await visit();
    const made = jobs.makeChild('new');
    assert.is(made.path, join(root, 'jobs', 'new'));
    made.close();
    throwsCode(() => jobs.makeChild('j1'), 'EXISTS', 'PUB-8');
    assert.equal(readdirSync(join(root, 'jobs')).sort(), ['j1', 'new']);
  });
}

held.run();
