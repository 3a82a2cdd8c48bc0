/**
 * One implementation of every read-side primitive: lstat, a bounded read, an
 * open for the caller to keep, a listing. Each is synchronous, over the
 * calls of a ReadCalls (seam.ts: the real ones, or a test's that lie), so
 * the async API of src/fs (read.ts, for the protocol) and the validator's
 * whole-queue audit (listDirSync, readBoundedSync) run the same code: no
 * twins to drift apart. Each call takes microseconds on a local filesystem;
 * a thread-pool round trip per call cost more than the call (seam.ts).
 */
import type { Dirent, Stats } from 'node:fs';
import { join } from 'node:path';
import type { Hash } from 'node:crypto';
import { FsjobError, errnoOf } from '../base/errors.ts';
import {
  O_NOATIME,
  READ_FLAGS,
  byName,
  kindOfDirent,
  kindOfStats,
  missingOrThrow,
  notFound,
  notRegular,
  refuseUnsafe,
  symlinkRefused,
  tooLarge,
  type DirEntry,
  type EntryKind,
} from './checks.ts';
import { wrapIo } from './io-error.ts';
import { realReads, type ReadCalls, type SafeFsSeam } from './seam.ts';

/** The read calls of a seam, or the real ones. */
export function readsOf(fs: SafeFsSeam | undefined): ReadCalls {
  return fs?.reads ?? realReads;
}

/**
 * lstat; ENOENT is undefined, other errnos are refusals or IO (missingOrThrow).
 * `shown` is the path messages name when `path` is the one a held directory
 * resolves (src/fs/open-dir.ts).
 */
export function lstatOrMissing(calls: ReadCalls, path: string, shown: string = path): Stats | undefined {
  try {
    return calls.lstat(path);
  } catch (error) {
    return missingOrThrow(error, shown);
  }
}

/** lstat for an audit: nothing there, or something in the way that is not a directory, is undefined. */
export function lstatIfExists(calls: ReadCalls, path: string, shown: string = path): Stats | undefined {
  try {
    return calls.lstat(path);
  } catch (error) {
    const errno = errnoOf(error);
    if (errno === 'ENOENT' || errno === 'ENOTDIR') return undefined;
    throw wrapIo(error, shown, 'lstat of');
  }
}

function closeQuietly(calls: ReadCalls, handle: number): void {
  try {
    calls.close(handle);
  } catch {
    // closing a read-only descriptor cannot lose anything
  }
}

// A file swapped between lstat and open is re-examined this many times.
const OPEN_ATTEMPTS = 3;
const READ_CHUNK_BYTES = 65_536;

export interface ReadFileOptions {
  /** Return undefined instead of throwing NOT_FOUND when the file is absent. */
  allowMissing?: boolean;
  /**
   * The caller listed the name and saw a regular file (d_type): skip the
   * lstat before the open. O_NOFOLLOW|O_NONBLOCK and the fstat still refuse
   * whatever replaced it meanwhile.
   */
  listed?: boolean;
  /** The uid files must belong to (SEC-6). @default the effective uid */
  uid?: number;
  /** Takes the content chunk by chunk instead, through hash.update() (a large file in bounded memory). */
  hash?: Pick<Hash, 'update'>;
  /** Read into this buffer when it is large enough; the result is then a view of it, valid until its next use. */
  scratch?: Buffer;
  /** Open with O_NOATIME where permitted (an audit leaves access times alone). */
  noatime?: boolean;
  /** The path messages name, when `path` is the one a held directory resolves. @default path */
  shown?: string;
}

export interface FileRead {
  /** fstat of the opened file: a regular file of ours, not group- or other-writable, within the bound. */
  stats: Stats;
  /** The content, unless options.hash took it. */
  bytes: Buffer | undefined;
}

function openFailure(error: unknown, path: string): FsjobError {
  const errno = errnoOf(error);
  if (errno === 'ENOENT') return notFound(path);
  if (errno === 'ELOOP') return symlinkRefused(path);
  if (errno === 'ENXIO' || errno === 'EISDIR') return notRegular(path, 'not a regular file', 'file');
  return wrapIo(error, path, 'opening');
}

function openForRead(calls: ReadCalls, path: string, noatime: boolean): number {
  if (noatime && O_NOATIME !== 0) {
    try {
      return calls.open(path, READ_FLAGS | O_NOATIME);
    } catch (error) {
      // O_NOATIME is for the file's owner: open without it, and let fstat refuse a foreign file.
      if (errnoOf(error) !== 'EPERM') throw error;
    }
  }
  return calls.open(path, READ_FLAGS);
}

/**
 * SEC-2..SEC-6 for one file, then its content: lstat (kind, size, owner,
 * mode; skipped when `listed`), open with O_RDONLY|O_NOFOLLOW|O_NONBLOCK, fstat
 * (the same dev/ino, the same checks), then at most maxBytes+1 bytes so a file
 * that grew is caught too. The parent directory is the caller's to check.
 */
export function readFile(calls: ReadCalls, path: string, maxBytes: number, options: ReadFileOptions = {}): FileRead | undefined {
  const listed = options.listed === true;
  const shown = options.shown ?? path;
  for (let attempt = 1; ; attempt++) {
    let before: Stats | undefined;
    if (!listed) {
      before = lstatOrMissing(calls, path, shown);
      if (before === undefined) {
        if (options.allowMissing === true) return undefined;
        throw notFound(shown);
      }
      refuseUnsafe(shown, before, 'file', options.uid);
      if (before.size > maxBytes) throw tooLarge(shown, String(before.size), maxBytes);
    }
    let handle: number;
    try {
      handle = openForRead(calls, path, options.noatime === true);
    } catch (error) {
      const errno = errnoOf(error);
      // Replaced or removed since the lstat: judge the new state afresh.
      if (!listed && (errno === 'ENOENT' || errno === 'ELOOP') && attempt < OPEN_ATTEMPTS) continue;
      if (errno === 'ENOENT' && options.allowMissing === true) return undefined;
      throw openFailure(error, shown);
    }
    try {
      const opened = calls.fstat(handle);
      if (before !== undefined && (opened.dev !== before.dev || opened.ino !== before.ino)) {
        if (attempt < OPEN_ATTEMPTS) continue;
        throw new FsjobError('IO', `${shown} kept being replaced while it was opened; retry when writers are quiet`, { path: shown, errno: 'EAGAIN' });
      }
      refuseUnsafe(shown, opened, 'file', options.uid);
      if (opened.size > maxBytes) throw tooLarge(shown, String(opened.size), maxBytes);
      if (options.hash !== undefined) {
        streamAtMost(calls, handle, shown, maxBytes, opened.size, options.hash, options.scratch);
        return { stats: opened, bytes: undefined };
      }
      return { stats: opened, bytes: readAtMost(calls, handle, shown, maxBytes, opened.size, options.scratch) };
    } catch (error) {
      throw wrapIo(error, shown, 'reading');
    } finally {
      closeQuietly(calls, handle);
    }
  }
}

/**
 * Reads the whole file into one buffer sized expected+1: a short read of a
 * regular file is its end, so a file that did not grow costs one read(2).
 */
function readAtMost(calls: ReadCalls, handle: number, path: string, maxBytes: number, expected: number, scratch: Buffer | undefined): Buffer {
  const want = Math.min(expected, maxBytes) + 1;
  let buffer = scratch !== undefined && scratch.length >= want ? scratch.subarray(0, want) : Buffer.allocUnsafe(want);
  let total = 0;
  for (;;) {
    if (total === buffer.length) {
      // It grew since the fstat: keep reading into a larger buffer, still bounded.
      if (total > maxBytes) throw tooLarge(path, `more than ${maxBytes}`, maxBytes);
      const larger = Buffer.allocUnsafe(Math.min(maxBytes + 1, Math.max(buffer.length * 2, READ_CHUNK_BYTES)));
      buffer.copy(larger, 0, 0, total);
      buffer = larger;
    }
    const room = buffer.length - total;
    const bytesRead = calls.read(handle, buffer, total, room, total);
    total += bytesRead;
    if (total > maxBytes) throw tooLarge(path, `more than ${maxBytes}`, maxBytes);
    // A short read at or past the size fstat gave is the end (regular files read short only at EOF).
    if (bytesRead === 0 || (bytesRead < room && total >= expected)) break;
  }
  return buffer.subarray(0, total);
}

function streamAtMost(calls: ReadCalls, handle: number, path: string, maxBytes: number, expected: number, hash: Pick<Hash, 'update'>, scratch: Buffer | undefined): void {
  const size = Math.min(READ_CHUNK_BYTES, maxBytes + 1);
  const buffer = scratch !== undefined && scratch.length >= size ? scratch.subarray(0, size) : Buffer.allocUnsafe(size);
  let total = 0;
  for (;;) {
    const bytesRead = calls.read(handle, buffer, 0, buffer.length, total);
    total += bytesRead;
    if (total > maxBytes) throw tooLarge(path, `more than ${maxBytes}`, maxBytes);
    if (bytesRead > 0) hash.update(buffer.subarray(0, bytesRead));
    if (bytesRead === 0 || (bytesRead < buffer.length && total >= expected)) break;
  }
}

/**
 * Opens a data file for the caller to keep (EXEC-7 hands a job's stdin to its
 * command as a descriptor), with readFile's checks; the caller closes it.
 */
export function openChecked(calls: ReadCalls, path: string, maxBytes: number, shown: string = path): { handle: number; size: number } {
  const before = lstatOrMissing(calls, path, shown);
  if (before === undefined) throw notFound(shown);
  refuseUnsafe(shown, before, 'file');
  if (before.size > maxBytes) throw tooLarge(shown, String(before.size), maxBytes);
  let handle: number;
  try {
    handle = calls.open(path, READ_FLAGS);
  } catch (error) {
    throw openFailure(error, shown);
  }
  try {
    const opened = calls.fstat(handle);
    if (opened.dev !== before.dev || opened.ino !== before.ino) {
      throw new FsjobError('IO', `${shown} was replaced while it was opened; retry`, { path: shown, errno: 'EAGAIN' });
    }
    refuseUnsafe(shown, opened, 'file');
    if (opened.size > maxBytes) throw tooLarge(shown, String(opened.size), maxBytes);
    return { handle, size: opened.size };
  } catch (error) {
    closeQuietly(calls, handle);
    throw wrapIo(error, shown, 'checking');
  }
}

function listFailure(error: unknown, dir: string): FsjobError {
  if (errnoOf(error) === 'ENOENT') return notFound(dir);
  return wrapIo(error, dir, 'listing');
}

function lstatKind(calls: ReadCalls, path: string, shown: string): EntryKind | undefined {
  const stats = lstatOrMissing(calls, path, shown);
  return stats === undefined ? undefined : kindOfStats(stats);
}

/**
 * A listing that follows nothing. Kinds come from d_type; where the
 * filesystem reports DT_UNKNOWN the entry is lstat-ed. Entries that vanish
 * while listing are left out. Sorted by name. The directory is the caller's
 * to check; `shown` is the path messages name (see lstatOrMissing).
 */
export function listEntries(calls: ReadCalls, dir: string, shown: string = dir): DirEntry[] {
  let dirents: Dirent[];
  try {
    dirents = calls.readdir(dir, { withFileTypes: true });
  } catch (error) {
    // Node itself lstats DT_UNKNOWN entries and fails the whole readdir when
    // one vanished meanwhile; fall back to names and our own tolerant lstat.
    if (errnoOf(error) !== 'ENOENT' || (lstatOrMissing(calls, dir, shown)) === undefined) {
      throw error instanceof FsjobError ? error : listFailure(error, shown);
    }
    let names: string[];
    try {
      names = calls.readdir(dir);
    } catch (second) {
      throw listFailure(second, shown);
    }
    const entries: DirEntry[] = [];
    for (const name of names) {
      const kind = lstatKind(calls, join(dir, name), join(shown, name));
      if (kind !== undefined) entries.push({ name, kind });
    }
    return entries.sort(byName);
  }
  const entries: DirEntry[] = [];
  for (const entry of dirents) {
    const kind = kindOfDirent(entry) ?? (lstatKind(calls, join(dir, entry.name), join(shown, entry.name)));
    if (kind !== undefined) entries.push({ name: entry.name, kind });
  }
  return entries.sort(byName);
}
