/**
 * publishIn's road (write.ts, PUB-1..PUB-6) for a directory held open on the
 * real filesystem when flush.ts lets fsyncs run inline: the same system calls
 * in the same order, with the same refusals, made one after another in one
 * synchronous function.
 *
 * Why a road of its own: on that path every step of a publish is already a
 * synchronous call (seam.ts's directFs; the fsyncs inline by flush.ts's
 * rule), but each was reached through an `await` of a promise that was
 * settled already, some fifteen per record, three records per payload job
 * (the claim, exec and receipt): a promise, a microtask and a resumption
 * each, mostly run by V8's interpreter in a consumer's first few hundred
 * jobs. Here a publish is one call, and publishIn hands its caller one
 * promise. The event loop waits exactly as long as before: no call here
 * runs unless flush.ts's rule (at most one operation of this process in
 * flight) already had the fsyncs, the only calls that wait for the disk,
 * run inline. A test seam, a directory named by its path or an fsync bound
 * for the pool takes write.ts's road. test/fs/publish-now.test.ts holds the
 * two roads to the same files and refusals.
 *
 * Also here, for both roads: whether a created file needs a chmod (the
 * umask), the look at a record's name before and after a link, and the
 * errors of a refused link or rename.
 */
import { closeSync, fchmodSync, fsyncSync, linkSync, openSync, readFileSync, renameSync, unlinkSync, writeSync, type Stats } from 'node:fs';
import { randomHex } from '../base/random.ts';
import { errnoOf, type FsjobError } from '../base/errors.ts';
import { CREATE_EXCLUSIVE_FLAGS, PRIVATE_FILE_MODE, describeKind, notRegular, recordExists, symlinkRefused, validateEntryName } from './checks.ts';
import type { DirRef } from './chain.ts';
import { filesystemLack, ownRecordNow } from './fs-lack.ts';
import { wrapIo } from './io-error.ts';
import { lstatOrMissing, readsOf } from './steps.ts';

let umask: number | undefined;

/**
 * Whether this process's umask clears bits of `mode`, so that a file created
 * with it needs a chmod to get it (SEC-5). The umask is read once: from
 * /proc/self/status where Linux has it (process.umask() without an argument
 * sets the umask twice to read it, and is deprecated). An ordinary umask
 * (022, 077) clears no bit of 0600, so the fchmod per created file is
 * skipped: it was 5 system calls of every job.
 */
export function fileModeNeedsChmod(mode: number = PRIVATE_FILE_MODE): boolean {
  if (umask === undefined) {
    try {
      const line = /^Umask:\s*([0-7]+)$/m.exec(readFileSync('/proc/self/status', 'latin1'));
      if (line !== null) umask = Number.parseInt(line[1] as string, 8);
    } catch {
      // no /proc: ask the process
    }
    umask ??= process.umask();
  }
  return (mode & umask) !== 0;
}

/** Refuse a symlink or non-regular entry at a record's name; its lstat, or undefined when the name is free. */
export function badTargetNow(ref: DirRef, name: string): Stats | undefined {
  const target = ref.entry(name);
  const stats = lstatOrMissing(readsOf(ref.options.fs), ref.at(name), target);
  if (stats === undefined) return undefined;
  if (stats.isSymbolicLink()) throw symlinkRefused(target);
  if (!stats.isFile()) throw notRegular(target, describeKind(stats), 'file');
  return stats;
}

/**
 * The look before a publish, on both roads (publishNow here, write.ts's for
 * the others): a symlink or non-regular entry at the name is refused, and a
 * record to be linked whose name is taken fails EXISTS before a temp file is
 * made; a rename always looks, a link unless `lookFirst` is false. The target
 * path, as messages name it.
 */
export function lookBeforePublish(ref: DirRef, name: string, placement: 'link' | 'rename', lookFirst: boolean): string {
  const target = ref.entry(name);
  if (placement === 'rename' || lookFirst) {
    const existing = badTargetNow(ref, name);
    if (existing !== undefined && placement === 'link') throw recordExists(target);
  }
  return target;
}

/** PUB-3's refusal of a link that failed with anything but EEXIST (FS-2 names a filesystem's lack). */
export function linkRefusal(error: unknown, target: string): FsjobError {
  return filesystemLack(error, 'link', target) ?? wrapIo(error, target, 'linking record into place', 'PUB-3');
}

/** PUB-4's refusal of a rename: a directory at the name is not a record; FS-2 names a filesystem's lack. */
export function renameRefusal(error: unknown, target: string): FsjobError {
  const errno = errnoOf(error);
  if (errno === 'EISDIR' || errno === 'ENOTEMPTY' || errno === 'EEXIST') return notRegular(target, 'a directory', 'file');
  return filesystemLack(error, 'rename', target) ?? wrapIo(error, target, 'renaming record into place', 'PUB-4');
}

/** writeAll (write.ts) on a descriptor of the real filesystem: every byte at offset 0 on, through as many write(2) as it takes. */
export function writeAllNow(fd: number, bytes: Uint8Array): void {
  for (let offset = 0; offset < bytes.length; ) {
    const written = writeSync(fd, bytes, offset, bytes.length - offset, offset);
    // A zero-byte write would loop forever; the kernel reports ENOSPC instead in practice.
    if (written <= 0) throw Object.assign(new Error('write made no progress'), { code: 'EIO' });
    offset += written;
  }
}

/** The steps of a temp file, named as each starts (the error says which failed). */
type TempStep = 'chmod of temp file' | 'writing temp file' | 'fsync of temp file';

/**
 * publishIn's steps, synchronously, in a held directory (`fd`) on the real filesystem; only while
 * flush.ts's inlineNow(). `lookFirst`: PublishOptions' (write.ts), resolved by the caller.
 */
export function publishNow(ref: DirRef, fd: number, name: string, data: string | Buffer, placement: 'link' | 'rename', lookFirst: boolean): string {
  validateEntryName(name, true);
  const target = lookBeforePublish(ref, name, placement, lookFirst);
  const tempName = `.${name}.${randomHex(8)}`;
  const tempAt = ref.at(tempName);
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  let tempExists = false;
  try {
    let file: number;
    try {
      file = openSync(tempAt, CREATE_EXCLUSIVE_FLAGS, PRIVATE_FILE_MODE);
    } catch (error) {
      throw wrapIo(error, ref.entry(tempName), 'creating temp file', 'PUB-1');
    }
    tempExists = true;
    let step: TempStep = 'chmod of temp file';
    try {
      if (fileModeNeedsChmod()) fchmodSync(file, PRIVATE_FILE_MODE);
      step = 'writing temp file';
      writeAllNow(file, bytes);
      step = 'fsync of temp file';
      fsyncSync(file);
    } catch (error) {
      throw wrapIo(error, ref.entry(tempName), step, step === 'chmod of temp file' ? 'SEC-5' : 'PUB-2');
    } finally {
      try {
        closeSync(file);
      } catch {
        // A close that fails after the fsync (or after the error above) loses nothing.
      }
    }
    if (placement === 'link') {
      try {
        linkSync(tempAt, ref.at(name));
      } catch (error) {
        if (errnoOf(error) !== 'EEXIST') throw linkRefusal(error, target);
        const occupant = badTargetNow(ref, name);
        // FS-3: a retransmitted link says EEXIST for the link it made.
        if (occupant === undefined || !ownRecordNow(ref, tempName, name, occupant, bytes)) throw recordExists(target);
      }
      // Committed: a leftover temp name is harmless garbage (GC removes dot files).
      tempExists = false;
      try {
        unlinkSync(tempAt);
      } catch {
        // harmless garbage, as said above
      }
    } else {
      try {
        renameSync(tempAt, ref.at(name));
      } catch (error) {
        throw renameRefusal(error, target);
      }
      tempExists = false;
    }
  } finally {
    if (tempExists) {
      try {
        unlinkSync(tempAt); // the error path only
      } catch {
        // left for GC, as a crash would leave it
      }
    }
  }
  try {
    fsyncSync(fd);
  } catch (error) {
    throw wrapIo(error, ref.path, 'fsync of directory', 'PUB-5');
  }
  return target;
}
