/**
 * One implementation of every read-side primitive, two ways to run it.
 *
 * A primitive is written once as a generator of steps (lstat, open, fstat,
 * read, close, readdir): the checks between the calls, the retries and the
 * bounds live there. `runSync` makes each step a synchronous system call;
 * `runAsync` hands it to a SafeFsSeam, which a test fills with faults. The
 * async API of src/fs runs synchronously on the real filesystem (each call
 * takes microseconds; a thread-pool round trip per call cost more than the
 * call, see seam.ts) and through the seam only when one is injected; the
 * validator calls the same steps synchronously for 100,000 jobs. There are
 * no twins to drift apart (proper-lockfile derives its sync API the same way).
 */
import { closeSync, fstatSync, lstatSync, openSync, readSync, readdirSync, type Dirent, type Stats } from 'node:fs';
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
import { directHandle, type SafeFsSeam, type SafeHandle } from './seam.ts';

/** A descriptor (runSync) or a seam's handle (runAsync). */
export type Handle = number | SafeHandle;

export type Step =
  | { call: 'lstat'; path: string }
  | { call: 'open'; path: string; flags: number }
  | { call: 'fstat'; handle: Handle }
  | { call: 'read'; handle: Handle; buffer: Buffer; offset: number; length: number; position: number }
  | { call: 'close'; handle: Handle }
  | { call: 'readdir'; path: string; types: boolean };

export type Steps<T> = Generator<Step, T, unknown>;

function callSync(step: Step): unknown {
  switch (step.call) {
    case 'lstat':
      return lstatSync(step.path);
    case 'open':
      return openSync(step.path, step.flags);
    case 'fstat':
      return fstatSync(step.handle as number);
    case 'read':
      return readSync(step.handle as number, step.buffer, step.offset, step.length, step.position);
    case 'close':
      return closeSync(step.handle as number);
    case 'readdir':
      return step.types ? readdirSync(step.path, { withFileTypes: true }) : readdirSync(step.path);
  }
}

async function callSeam(step: Step, fs: SafeFsSeam): Promise<unknown> {
  switch (step.call) {
    case 'lstat':
      return fs.lstat(step.path);
    case 'open':
      return fs.open(step.path, step.flags);
    case 'fstat':
      return (step.handle as SafeHandle).stat();
    case 'read':
      return (await (step.handle as SafeHandle).read(step.buffer, step.offset, step.length, step.position)).bytesRead;
    case 'close':
      return (step.handle as SafeHandle).close();
    case 'readdir':
      return step.types ? fs.readdir(step.path, { withFileTypes: true }) : fs.readdir(step.path);
  }
}

/** Runs the steps as synchronous system calls; a failing call is thrown into the generator. */
export function runSync<T>(steps: Steps<T>): T {
  let next = steps.next();
  while (next.done !== true) {
    let value: unknown;
    try {
      value = callSync(next.value);
    } catch (error) {
      next = steps.throw(error);
      continue;
    }
    next = steps.next(value);
  }
  return next.value;
}

/** Runs the steps through a seam. */
export async function runAsync<T>(steps: Steps<T>, fs: SafeFsSeam): Promise<T> {
  let next = steps.next();
  while (next.done !== true) {
    let value: unknown;
    try {
      value = await callSeam(next.value, fs);
    } catch (error) {
      next = steps.throw(error);
      continue;
    }
    next = steps.next(value);
  }
  return next.value;
}

/** Synchronously on the real filesystem, or through the seam when one is given. */
export async function run<T>(steps: Steps<T>, fs: SafeFsSeam | undefined): Promise<T> {
  return fs === undefined ? runSync(steps) : runAsync(steps, fs);
}

/** A handle the caller keeps, whichever way it was opened. */
export function keptHandle(handle: Handle): SafeHandle {
  return typeof handle === 'number' ? directHandle(handle) : handle;
}

// ---------------------------------------------------------------------------

/** lstat; ENOENT is undefined, other errnos are refusals or IO (missingOrThrow). */
export function* lstatOrMissing(path: string): Steps<Stats | undefined> {
  try {
    return (yield { call: 'lstat', path }) as Stats;
  } catch (error) {
    return missingOrThrow(error, path);
  }
}

/** lstat for an audit: nothing there, or something in the way that is not a directory, is undefined. */
export function* lstatIfExists(path: string): Steps<Stats | undefined> {
  try {
    return (yield { call: 'lstat', path }) as Stats;
  } catch (error) {
    const errno = errnoOf(error);
    if (errno === 'ENOENT' || errno === 'ENOTDIR') return undefined;
    throw wrapIo(error, path, 'lstat of');
  }
}

function* closeQuietly(handle: Handle): Steps<void> {
  try {
    yield { call: 'close', handle };
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

function* openForRead(path: string, noatime: boolean): Steps<Handle> {
  if (noatime && O_NOATIME !== 0) {
    try {
      return (yield { call: 'open', path, flags: READ_FLAGS | O_NOATIME }) as Handle;
    } catch (error) {
      // O_NOATIME is for the file's owner: open without it, and let fstat refuse a foreign file.
      if (errnoOf(error) !== 'EPERM') throw error;
    }
  }
  return (yield { call: 'open', path, flags: READ_FLAGS }) as Handle;
}

/**
 * SEC-2..SEC-6 for one file, then its content: lstat (kind, size, owner,
 * mode; skipped when `listed`), open with O_RDONLY|O_NOFOLLOW|O_NONBLOCK, fstat
 * (the same dev/ino, the same checks), then at most maxBytes+1 bytes so a file
 * that grew is caught too. The parent directory is the caller's to check.
 */
export function* readFile(path: string, maxBytes: number, options: ReadFileOptions = {}): Steps<FileRead | undefined> {
  const listed = options.listed === true;
  for (let attempt = 1; ; attempt++) {
    let before: Stats | undefined;
    if (!listed) {
      before = yield* lstatOrMissing(path);
      if (before === undefined) {
        if (options.allowMissing === true) return undefined;
        throw notFound(path);
      }
      refuseUnsafe(path, before, 'file', options.uid);
      if (before.size > maxBytes) throw tooLarge(path, String(before.size), maxBytes);
    }
    let handle: Handle;
    try {
      handle = yield* openForRead(path, options.noatime === true);
    } catch (error) {
      const errno = errnoOf(error);
      // Replaced or removed since the lstat: judge the new state afresh.
      if (!listed && (errno === 'ENOENT' || errno === 'ELOOP') && attempt < OPEN_ATTEMPTS) continue;
      if (errno === 'ENOENT' && options.allowMissing === true) return undefined;
      throw openFailure(error, path);
    }
    try {
      const opened = (yield { call: 'fstat', handle }) as Stats;
      if (before !== undefined && (opened.dev !== before.dev || opened.ino !== before.ino)) {
        if (attempt < OPEN_ATTEMPTS) continue;
        throw new FsjobError('IO', `${path} kept being replaced while it was opened; retry when writers are quiet`, { path, errno: 'EAGAIN' });
      }
      refuseUnsafe(path, opened, 'file', options.uid);
      if (opened.size > maxBytes) throw tooLarge(path, String(opened.size), maxBytes);
      if (options.hash !== undefined) {
        yield* streamAtMost(handle, path, maxBytes, opened.size, options.hash, options.scratch);
        return { stats: opened, bytes: undefined };
      }
      return { stats: opened, bytes: yield* readAtMost(handle, path, maxBytes, opened.size, options.scratch) };
    } catch (error) {
      throw wrapIo(error, path, 'reading');
    } finally {
      yield* closeQuietly(handle);
    }
  }
}

/**
 * Reads the whole file into one buffer sized expected+1: a short read of a
 * regular file is its end, so a file that did not grow costs one read(2).
 */
function* readAtMost(handle: Handle, path: string, maxBytes: number, expected: number, scratch: Buffer | undefined): Steps<Buffer> {
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
    const bytesRead = (yield { call: 'read', handle, buffer, offset: total, length: room, position: total }) as number;
    total += bytesRead;
    if (total > maxBytes) throw tooLarge(path, `more than ${maxBytes}`, maxBytes);
    // A short read at or past the size fstat gave is the end (regular files read short only at EOF).
    if (bytesRead === 0 || (bytesRead < room && total >= expected)) break;
  }
  return buffer.subarray(0, total);
}

function* streamAtMost(handle: Handle, path: string, maxBytes: number, expected: number, hash: Pick<Hash, 'update'>, scratch: Buffer | undefined): Steps<void> {
  const size = Math.min(READ_CHUNK_BYTES, maxBytes + 1);
  const buffer = scratch !== undefined && scratch.length >= size ? scratch.subarray(0, size) : Buffer.allocUnsafe(size);
  let total = 0;
  for (;;) {
    const bytesRead = (yield { call: 'read', handle, buffer, offset: 0, length: buffer.length, position: total }) as number;
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
export function* openChecked(path: string, maxBytes: number): Steps<{ handle: Handle; size: number }> {
  const before = yield* lstatOrMissing(path);
  if (before === undefined) throw notFound(path);
  refuseUnsafe(path, before, 'file');
  if (before.size > maxBytes) throw tooLarge(path, String(before.size), maxBytes);
  let handle: Handle;
  try {
    handle = (yield { call: 'open', path, flags: READ_FLAGS }) as Handle;
  } catch (error) {
    throw openFailure(error, path);
  }
  try {
    const opened = (yield { call: 'fstat', handle }) as Stats;
    if (opened.dev !== before.dev || opened.ino !== before.ino) {
      throw new FsjobError('IO', `${path} was replaced while it was opened; retry`, { path, errno: 'EAGAIN' });
    }
    refuseUnsafe(path, opened, 'file');
    if (opened.size > maxBytes) throw tooLarge(path, String(opened.size), maxBytes);
    return { handle, size: opened.size };
  } catch (error) {
    yield* closeQuietly(handle);
    throw wrapIo(error, path, 'checking');
  }
}

function listFailure(error: unknown, dir: string): FsjobError {
  if (errnoOf(error) === 'ENOENT') return notFound(dir);
  return wrapIo(error, dir, 'listing');
}

function* lstatKind(path: string): Steps<EntryKind | undefined> {
  const stats = yield* lstatOrMissing(path);
  return stats === undefined ? undefined : kindOfStats(stats);
}

/**
 * A listing that follows nothing. Kinds come from d_type; where the
 * filesystem reports DT_UNKNOWN the entry is lstat-ed. Entries that vanish
 * while listing are left out. Sorted by name. The directory is the caller's
 * to check.
 */
export function* listEntries(dir: string): Steps<DirEntry[]> {
  let dirents: Dirent[];
  try {
    dirents = (yield { call: 'readdir', path: dir, types: true }) as Dirent[];
  } catch (error) {
    // Node itself lstats DT_UNKNOWN entries and fails the whole readdir when
    // one vanished meanwhile; fall back to names and our own tolerant lstat.
    if (errnoOf(error) !== 'ENOENT' || (yield* lstatOrMissing(dir)) === undefined) {
      throw error instanceof FsjobError ? error : listFailure(error, dir);
    }
    let names: string[];
    try {
      names = (yield { call: 'readdir', path: dir, types: false }) as string[];
    } catch (second) {
      throw listFailure(second, dir);
    }
    const entries: DirEntry[] = [];
    for (const name of names) {
      const kind = yield* lstatKind(join(dir, name));
      if (kind !== undefined) entries.push({ name, kind });
    }
    return entries.sort(byName);
  }
  const entries: DirEntry[] = [];
  for (const entry of dirents) {
    const kind = kindOfDirent(entry) ?? (yield* lstatKind(join(dir, entry.name)));
    if (kind !== undefined) entries.push({ name: entry.name, kind });
  }
  return entries.sort(byName);
}
