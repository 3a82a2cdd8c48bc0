/**
 * FS-2: before a queue is created, and before a long-running consumer serves
 * one, try in tmp/ the operations FS-1 requires of the filesystem and refuse
 * the queue, naming the one that failed, instead of failing later in the
 * middle of a claim. The probe's names start with '.' (temporary, LAYOUT-6)
 * and are removed after, also when it fails. It costs two small files and
 * three fsyncs, once per init or worker start, never per job.
 *
 * What is not probed, and why: that a link is atomic and that fsync reaches
 * the server cannot be seen from one client; sshfs shows hard links as
 * separate files (another inode, nlink 1), so the probe compares bytes, not
 * inodes, as FS-3 does.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { FsjobError, errnoOf } from '../base/errors.ts';
import { checkDirInside, type SafeFsOptions } from './chain.ts';
import { CREATE_EXCLUSIVE_FLAGS, PRIVATE_FILE_MODE } from './checks.ts';
import { FILESYSTEMS_THAT_DO } from './fs-lack.ts';
import { fsyncDir, writeAll } from './write.ts';
import { directFs, type SafeFsSeam } from './seam.ts';
import { wrapIo } from './io-error.ts';
import { readsOf } from './steps.ts';

/**
 * Errors that say how the filesystem is now (full, read-only, closed to this
 * user, out of descriptors), not what it can do: a queue there works once
 * that changes, so they are reported as the plain IO error they are, never
 * as "cannot hold an fsjob queue", which would send the operator to another
 * filesystem.
 */
const CONDITIONS = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EACCES', 'EMFILE', 'ENFILE', 'EIO', 'ENOMEM']);

function refuse(dir: string, operation: string, detail: string, error?: unknown): FsjobError {
  const errno = error === undefined ? undefined : errnoOf(error);
  if (errno !== undefined && CONDITIONS.has(errno)) return wrapIo(error, dir, `${operation} in`);
  return new FsjobError(
    'IO',
    `the filesystem of ${dir} cannot hold an fsjob queue: ${operation} ${detail} (FS-1); put the queue on a filesystem that does (${FILESYSTEMS_THAT_DO})`,
    { path: dir, clause: 'FS-2', ...(errno === undefined ? {} : { errno }), ...(error === undefined ? {} : { cause: error }) },
  );
}

/** A file created as PUB-1 creates one (exclusive, 0600, no symlink followed), written and fsynced. */
async function writeProbe(fs: SafeFsSeam, path: string, text: string): Promise<void> {
  const handle = await fs.open(path, CREATE_EXCLUSIVE_FLAGS, PRIVATE_FILE_MODE);
  try {
    await handle.chmod(PRIVATE_FILE_MODE);
    await writeAll(handle, Buffer.from(text));
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** FS-2's probe in `tmpDir` (a queue's tmp/): resolves when FS-1's operations work there, else throws IO with clause FS-2. */
export async function probeFilesystem(tmpDir: string, options: SafeFsOptions = {}): Promise<void> {
  // SEC-2 first: a probe never writes through a symlinked or foreign tmp/.
  await checkDirInside(tmpDir, options);
  const fs = options.fs ?? directFs;
  const stem = `.fsjob-probe-${randomBytes(6).toString('hex')}`;
  const [first, linked, second] = [`${stem}.a`, `${stem}.b`, `${stem}.c`].map((name) => join(tmpDir, name)) as [string, string, string];
  try {
    try {
      await writeProbe(fs, first, 'a\n');
    } catch (error) {
      throw refuse(tmpDir, 'exclusive creation of a private file (O_CREAT|O_EXCL, chmod 0600, fsync)', `failed with ${errnoOf(error) ?? String(error)}`, error);
    }
    try {
      await fs.link(first, linked);
    } catch (error) {
      throw refuse(tmpDir, 'link() to a new name', `failed with ${errnoOf(error) ?? String(error)}`, error);
    }
    await writeProbe(fs, second, 'c\n');
    let linkedOver = false;
    try {
      await fs.link(second, linked);
      linkedOver = true;
    } catch (error) {
      if (errnoOf(error) !== 'EEXIST') throw refuse(tmpDir, 'link() onto an existing name', `failed with ${errnoOf(error) ?? String(error)} instead of EEXIST`, error);
    }
    if (linkedOver) throw refuse(tmpDir, 'link() onto an existing name', 'succeeded: it must fail with EEXIST, or two claims of one generation could both win');
    try {
      await fs.rename(second, linked);
    } catch (error) {
      throw refuse(tmpDir, 'rename() over an existing file', `failed with ${errnoOf(error) ?? String(error)}`, error);
    }
    const reads = readsOf(options.fs);
    const fd = reads.open(linked, 0);
    const buffer = Buffer.alloc(8);
    let got: number;
    try {
      got = reads.read(fd, buffer, 0, buffer.length, 0);
    } finally {
      reads.close(fd);
    }
    if (buffer.subarray(0, got).toString() !== 'c\n') throw refuse(tmpDir, 'rename() over an existing file', 'left the old content in place');
    try {
      await fsyncDir(tmpDir, options);
    } catch (error) {
      throw refuse(tmpDir, 'fsync of a directory', `failed with ${errnoOf(error) ?? String(error)}`, error);
    }
  } finally {
    for (const name of [first, linked, second]) await fs.unlink(name).catch(() => undefined);
  }
}
