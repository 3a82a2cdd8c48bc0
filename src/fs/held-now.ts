/**
 * createIn's and moveIn's roads (write.ts: PUB-7, ENQ-3) for directories
 * held open on the real filesystem (open-dir.ts), as one synchronous call
 * each: the same system calls in the same order, with the same refusals.
 *
 * Why a road of its own: without a seam both already make their calls
 * synchronously (seam.ts's directFs), but each is reached through an
 * `await`, and an `enqueue` alone in its process, whose fsyncs run inline
 * (flush.ts), makes two creates and a move: the producer's synchronous road
 * (src/producer/enqueue-now.ts) takes these instead, as a consumer's records
 * take publish-now.ts's. Only for an OpenDir: a directory named by its path
 * is checked per call by the async road, and a seam must see its calls.
 * test/producer/enqueue-now.test.ts holds both roads to the same files and
 * refusals.
 */
import { closeSync, fchmodSync, openSync, renameSync, unlinkSync } from 'node:fs';
import { errnoOf, FsjobError } from '../base/errors.ts';
import { CREATE_EXCLUSIVE_FLAGS, PRIVATE_FILE_MODE, notFound, symlinkRefused, validateEntryName } from './checks.ts';
import { filesystemLack } from './fs-lack.ts';
import { wrapIo } from './io-error.ts';
import type { OpenDir } from './open-dir.ts';
import { fileModeNeedsChmod } from './publish-now.ts';
import { lstatOrMissing, readsOf } from './steps.ts';

/**
 * createIn (PUB-7) of `name` in a held directory, mode 0600: the descriptor,
 * for the caller to write, fsync and close. SYMLINK_REFUSED for a link at
 * the name, EXISTS for anything else there.
 */
export function createNow(dir: OpenDir, name: string): number {
  validateEntryName(name, false);
  const path = dir.entry(name);
  const at = dir.at(name);
  let fd: number;
  try {
    fd = openSync(at, CREATE_EXCLUSIVE_FLAGS, PRIVATE_FILE_MODE);
  } catch (error) {
    if (errnoOf(error) === 'EEXIST') {
      if (lstatOrMissing(readsOf(undefined), at, path)?.isSymbolicLink() === true) throw symlinkRefused(path);
      throw new FsjobError('EXISTS', `${path} already exists; data files are created exclusively (PUB-7)`, { path, clause: 'PUB-7' });
    }
    throw wrapIo(error, path, 'creating', 'PUB-7');
  }
  // The umask may only clear bits: a mode it leaves whole needs no chmod (SEC-5).
  if (fileModeNeedsChmod(PRIVATE_FILE_MODE)) {
    try {
      fchmodSync(fd, PRIVATE_FILE_MODE);
    } catch (error) {
      closeQuietly(fd);
      try {
        unlinkSync(at);
      } catch {
        // left for GC, as a crash would leave it
      }
      throw wrapIo(error, path, 'chmod of', 'SEC-5');
    }
  }
  return fd;
}

/** close(2) whose failure loses nothing (after an fsync, or on an error path). */
export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // nothing to lose: the bytes were fsynced, or the step failed already
  }
}

/**
 * moveIn (write.ts) of a directory this process made and holds (`made`):
 * `from`/`name` renamed to `to`/`newName`, never over an existing entry.
 * Linux rename() replaces an empty directory, so the target is lstat-ed
 * first (moveNoReplace's residual race, write.ts, stays as it is there).
 */
export function moveNow(from: OpenDir, name: string, to: OpenDir, newName: string): void {
  const src = from.entry(name);
  const dst = to.entry(newName);
  const srcAt = from.at(name);
  const dstAt = to.at(newName);
  const taken = (): FsjobError => new FsjobError('EXISTS', `${dst} already exists; a staged directory never replaces one. Pick a new id.`, { path: dst });
  const occupant = lstatOrMissing(readsOf(undefined), dstAt, dst);
  if (occupant?.isSymbolicLink() === true) throw symlinkRefused(dst);
  if (occupant !== undefined) throw taken();
  try {
    renameSync(srcAt, dstAt);
  } catch (error) {
    const errno = errnoOf(error);
    if (errno === 'EEXIST' || errno === 'ENOTEMPTY' || errno === 'ENOTDIR') throw taken();
    if (errno === 'ENOENT') throw notFound(src);
    throw filesystemLack(error, 'rename', dst) ?? wrapIo(error, dst, `renaming ${src} to`);
  }
}
