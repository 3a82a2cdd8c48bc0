/**
 * src/fs/seam.ts (safefs's default seam: synchronous calls, fsync in
 * the pool) and what safefs trusts because of it: ancestors of the directory
 * a call acts in, for at most ANCESTOR_TRUST_MS.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, renameSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { directFs } from '../../src/fs/seam.ts';
import { CREATE_EXCLUSIVE_FLAGS, PRIVATE_DIR_MODE, publishRecord } from '../../src/fs/safefs.ts';
import { cleanupAll, freshDir, rejectsWith } from '../support/helpers.ts';

const handles = suite('directFs handles');
handles.after(cleanupAll);

handles('a second close never closes the descriptor number the process reused meanwhile', async () => {
  const dir = await freshDir('direct-fs');
  const first = await directFs.open(join(dir, 'a'), CREATE_EXCLUSIVE_FLAGS, 0o600);
  const number = first.fd;
  await first.close();
  // The kernel hands out the lowest free number: very likely the one just freed.
  const other = openSync(join(dir, 'b'), 'w', 0o600);
  try {
    await first.close();
    assert.ok(fstatSync(other).isFile(), `descriptor ${other} still open after the stale handle (was ${number}) closed again`);
  } finally {
    closeSync(other);
  }
});

handles('a closed handle refuses every call with EBADF', async () => {
  const dir = await freshDir('direct-fs');
  const handle = await directFs.open(join(dir, 'a'), CREATE_EXCLUSIVE_FLAGS, 0o600);
  await handle.close();
  for (const call of [() => handle.write(Buffer.from('x')), () => handle.sync(), () => handle.stat(), () => handle.chmod(0o600)]) {
    const error = await call().then(
      () => undefined,
      (e: unknown) => e as NodeJS.ErrnoException,
    );
    assert.is(error?.code, 'EBADF');
  }
});

handles('write without offset and length appends the whole buffer at the current position; sync reaches the pool and resolves', async () => {
  const dir = await freshDir('direct-fs');
  const path = join(dir, 'out');
  const handle = await directFs.open(path, CREATE_EXCLUSIVE_FLAGS, 0o600);
  assert.equal(await handle.write(Buffer.from('abc')), { bytesWritten: 3 });
  assert.equal(await handle.write(Buffer.from('xdefx'), 1, 3), { bytesWritten: 3 });
  await handle.sync();
  await handle.close();
  assert.is(readFileSync(path, 'utf8'), 'abcdef');
});

const trust = suite('safefs trusts ancestors briefly, never the directory it acts in (SEC-2)');
trust.after(cleanupAll);

/** A queue-like root with jobs/<id>/, and a record published there once (which makes root and jobs/ trusted). */
async function published(): Promise<{ root: string; jobs: string; job: string }> {
  const root = await freshDir('direct-fs-q');
  const jobs = join(root, 'jobs');
  const job = join(jobs, 'j1');
  mkdirSync(jobs, { mode: PRIVATE_DIR_MODE });
  mkdirSync(job, { mode: PRIVATE_DIR_MODE });
  await publishRecord(job, 'a.json', '{}\n', 'link', { root });
  return { root, jobs, job };
}

trust('the directory a record goes into is checked on every call: a symlink there is refused at once', async () => {
  const { root, jobs, job } = await published();
  renameSync(job, join(jobs, 'moved'));
  symlinkSync(join(jobs, 'moved'), job);
  await rejectsWith(publishRecord(job, 'b.json', '{}\n', 'link', { root }), 'SYMLINK_REFUSED', { clause: 'SEC-2', path: job });
});

trust('an ancestor swapped for a symlink is refused once its trust has lapsed (ANCESTOR_TRUST_MS, 1 s)', async () => {
  const { root, jobs, job } = await published();
  renameSync(jobs, join(root, 'jobs.real'));
  symlinkSync(join(root, 'jobs.real'), jobs);
  await sleep(1100);
  await rejectsWith(publishRecord(job, 'b.json', '{}\n', 'link', { root }), 'SYMLINK_REFUSED', { clause: 'SEC-2', path: jobs });
});

handles.run();
trust.run();
