/**
 * The only code that touches protocol files. Everything else in fsjob reads,
 * writes, lists and removes queue entries through these primitives, so the
 * security and durability rules live in one place.
 *
 * Guarantees (clause ids are the ones carried by the errors thrown):
 * - SEC-1 `checkQueueRoot`: the root is a real directory (not a symlink), owned
 *   by the effective uid and not writable by group or others.
 * - SEC-2 no path inside a queue is followed when it is a symlink. Final
 *   components are opened with O_NOFOLLOW; directories above them are lstat-
 *   checked first because O_NOFOLLOW only protects the last component. Without
 *   the `root` option only the immediate parent directory is checked; with it,
 *   every directory from the root down (the parent on every call, those above
 *   it again once a passing check is ANCESTOR_TRUST_MS old).
 * - SEC-3 a FIFO, socket, device or directory where a file belongs is refused
 *   after an lstat and is never opened blocking (reads use O_NONBLOCK and are
 *   re-verified with fstat), so no call can hang on a FIFO.
 * - SEC-4 reads are bounded: the size is checked before and after opening and
 *   at most bound+1 bytes are ever read, so a growing file is caught too.
 * - SEC-5 directories are created 0700 and files 0600 with an explicit chmod
 *   (independent of umask); anything group- or other-writable is refused.
 * - SEC-6 anything owned by another uid is refused.
 * - PUB-1..PUB-7 records are published by temp file + fsync + link/rename +
 *   directory fsync (see `publishRecord`), data files are created exclusively.
 *
 * Residual race, stated once: the lstat checks on parent directories are not
 * atomic with the open that follows (Node has no openat). Exploiting the gap
 * needs write access to a directory that SEC-5/SEC-6 just proved is private to
 * our own uid, so the attacker would already be us.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, readdirSync } from 'node:fs';
import type { Dirent, Stats } from 'node:fs';
import { directFs, type SafeFsSeam, type SafeHandle } from './seam.ts';
import { type Hash, randomBytes } from 'node:crypto';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { FsjobError, errnoOf } from '../base/errors.ts';
import { wrapIo } from './io-error.ts';
import { RECORD_MAX, STDIN_MAX } from '../base/constants.ts';

/** SEC-5 */
export const PRIVATE_FILE_MODE = 0o600;
/** SEC-5 */
export const PRIVATE_DIR_MODE = 0o700;

// Node 20 does not export O_CLOEXEC: libuv ORs it into every open() on Linux
// itself. Use the constant where a platform provides it, 0 otherwise.
const O_CLOEXEC = (constants as unknown as Record<string, number | undefined>)['O_CLOEXEC'] ?? 0;
const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY } = constants;

/** SEC-3: never follows, never blocks on a FIFO. */
export const READ_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
/** PUB-1 / PUB-7: exclusive creation that never follows a planted link. */
export const CREATE_EXCLUSIVE_FLAGS = O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC;
/** PUB-5: a directory opened only to fsync it. */
export const DIR_SYNC_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

const GROUP_OR_OTHER_WRITE = 0o022;
// ".<name>.<16 hex>" must still fit NAME_MAX (255 bytes).
const TEMP_NAME_OVERHEAD = 1 + 1 + 16;
const NAME_MAX_BYTES = 255;
const READ_CHUNK_BYTES = 65_536;
// A file swapped between lstat and open is re-examined this many times.
const OPEN_ATTEMPTS = 3;

export type { SafeFsSeam, SafeHandle } from './seam.ts';

export interface SafeFsOptions {
  /** Defaults to directFs (synchronous calls, fsync through the thread pool); tests inject faults here. */
  fs?: SafeFsSeam;
  /** The queue root; when given, every directory from it down to the target's parent is checked. */
  root?: string;
}

export type EntryKind = 'file' | 'dir' | 'symlink' | 'fifo' | 'socket' | 'other';

export interface DirEntry {
  name: string;
  kind: EntryKind;
}

export type Placement = 'link' | 'rename';

function seamOf(options: SafeFsOptions | undefined): SafeFsSeam {
  return options?.fs ?? directFs;
}

// Only POSIX is supported; geteuid exists there. fsjob never changes its
// euid, so asking once saves a system call per check (~40 per job).
const EUID = process.geteuid?.() ?? 0;

function effectiveUid(): number {
  return EUID;
}

/**
 * How long an ancestor directory's SEC-1/2/5/6 verdict is trusted before it
 * is lstat-ed again. Every primitive checks the chain root → ... → parent; a
 * job touches the same root and jobs/ some twenty times in a few ms. The
 * directory a call acts in is always checked afresh; only those above it are
 * remembered, for at most this long, and only a passing verdict. What this
 * gives up is already conceded above (the residual race): replacing a
 * directory of a private queue takes our own uid.
 */
const ANCESTOR_TRUST_MS = 1000;
const trustedAncestors = new Map<string, number>();

function ancestorTrusted(dir: string, nowMs: number): boolean {
  const at = trustedAncestors.get(dir);
  return at !== undefined && nowMs - at < ANCESTOR_TRUST_MS;
}

function trustAncestor(dir: string, nowMs: number): void {
  // Bounded: a worker serves a handful of queues, but paths are arbitrary.
  if (trustedAncestors.size >= 256) trustedAncestors.clear();
  trustedAncestors.set(dir, nowMs);
}

function describeKind(stats: Stats): string {
  if (stats.isSymbolicLink()) return 'a symbolic link';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFile()) return 'a regular file';
  return 'a special file';
}

function octal(mode: number): string {
  return `0${(mode & 0o7777).toString(8)}`;
}

function symlinkRefused(path: string): FsjobError {
  return new FsjobError(
    'SYMLINK_REFUSED',
    `${path} is a symbolic link; fsjob never follows links inside a queue (SEC-2). Remove the link and put the real entry there.`,
    { path, clause: 'SEC-2' },
  );
}

function notRegular(path: string, what: string, wanted: 'file' | 'dir'): FsjobError {
  const belongs = wanted === 'file' ? 'a regular file' : 'a directory';
  return new FsjobError(
    'NOT_REGULAR',
    `${path} is ${what} where ${belongs} belongs (SEC-3); fsjob refuses it without opening it. Remove it.`,
    { path, clause: 'SEC-3' },
  );
}

function notFound(path: string): FsjobError {
  return new FsjobError('NOT_FOUND', `${path} does not exist; check the path or create it first`, { path });
}

function tooLarge(path: string, size: string, maxBytes: number): FsjobError {
  return new FsjobError(
    'TOO_LARGE',
    `${path} is ${size} bytes, over the ${maxBytes}-byte bound (SEC-4); it is refused unread. Remove or shrink it.`,
    { path, clause: 'SEC-4' },
  );
}

/** SEC-2/3/5/6 on one lstat or fstat result. */
function refuseUnsafe(path: string, stats: Stats, wanted: 'file' | 'dir', uid: number = effectiveUid()): void {
  if (stats.isSymbolicLink()) throw symlinkRefused(path);
  const rightKind = wanted === 'file' ? stats.isFile() : stats.isDirectory();
  if (!rightKind) throw notRegular(path, describeKind(stats), wanted);
  if (stats.uid !== uid) {
    throw new FsjobError(
      'FOREIGN_OWNER',
      `${path} is owned by uid ${stats.uid}, not by uid ${uid} running fsjob (SEC-6); only the queue's owner may use it. Run as that user or remove the entry.`,
      { path, clause: 'SEC-6' },
    );
  }
  if ((stats.mode & GROUP_OR_OTHER_WRITE) !== 0) {
    throw new FsjobError(
      'UNSAFE_MODE',
      `${path} has mode ${octal(stats.mode)}, writable by group or others (SEC-5); fsjob will not trust it. Run chmod go-w on it if its content is yours.`,
      { path, clause: 'SEC-5' },
    );
  }
}

/** lstat, with ENOENT reported as undefined and other errnos as refusals or IO. */
async function lstatOrMissing(fs: SafeFsSeam, path: string): Promise<Stats | undefined> {
  try {
    return await fs.lstat(path);
  } catch (error) {
    return missingOrThrow(error, path);
  }
}

/** lstatOrMissing, synchronously (the real filesystem only: no seam). */
function lstatOrMissingSync(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (error) {
    return missingOrThrow(error, path);
  }
}

function missingOrThrow(error: unknown, path: string): undefined {
  const errno = errnoOf(error);
  if (errno === 'ENOENT') return undefined;
  if (errno === 'ENOTDIR') throw notRegular(path, 'under something that is not a directory', 'file');
  if (errno === 'ELOOP') throw symlinkRefused(path);
  throw wrapIo(error, path, 'lstat of');
}

/** Directories from `root` down to `dir` (both included); just `dir` without a root. */
function directoryChain(dir: string, root: string | undefined): string[] {
  if (root === undefined) return [dir];
  const absRoot = resolve(root);
  const absDir = resolve(dir);
  const rel = relative(absRoot, absDir);
  if (rel === '') return [absRoot];
  if (rel.startsWith('..') || isAbsolute(rel)) {
    throw new FsjobError('USAGE', `${dir} is not inside the queue root ${root}; pass a path under the root`, {
      path: dir,
    });
  }
  const chain = [absRoot];
  let current = absRoot;
  for (const part of rel.split(sep)) {
    current = join(current, part);
    chain.push(current);
  }
  return chain;
}

/** SEC-1: lstat-based check of a queue root. */
export async function checkQueueRoot(root: string, options: SafeFsOptions = {}): Promise<void> {
  judgeQueueRoot(root, options.fs === undefined ? lstatOrMissingSync(root) : await lstatOrMissing(options.fs, root));
}

function judgeQueueRoot(root: string, stats: Stats | undefined): void {
  if (stats === undefined) {
    throw new FsjobError('NOT_A_QUEUE', `${root} does not exist; create the queue first (fsjob init)`, {
      path: root,
      clause: 'SEC-1',
    });
  }
  const unsafe = (reason: string, fix: string): FsjobError =>
    new FsjobError('UNSAFE_QUEUE', `queue root ${root} ${reason} (SEC-1); ${fix}`, { path: root, clause: 'SEC-1' });
  if (stats.isSymbolicLink()) throw unsafe('is a symbolic link', 'use the real directory path instead');
  if (!stats.isDirectory()) throw unsafe(`is ${describeKind(stats)}, not a directory`, 'point fsjob at a queue directory');
  const uid = effectiveUid();
  if (stats.uid !== uid) throw unsafe(`is owned by uid ${stats.uid}, not ${uid}`, "run fsjob as the queue's owner");
  if ((stats.mode & GROUP_OR_OTHER_WRITE) !== 0) {
    throw unsafe(`has mode ${octal(stats.mode)}, writable by group or others`, 'run chmod 700 on it');
  }
}

/**
 * SEC-2/3/5/6 for a directory inside a queue (and, with `root`, for every
 * directory above it up to the root, which gets the SEC-1 check).
 *
 * Every safefs primitive calls this, so it runs a few times per protocol
 * step. With the real filesystem (no `fs` seam) the lstats are synchronous:
 * the same checks, in the same order, but without a thread-pool round trip
 * each (an lstat of a cached directory costs microseconds; the hand-off to
 * libuv's pool and back cost far more, ~100 of them per command job).
 */
export async function checkDirInside(path: string, options: SafeFsOptions = {}): Promise<void> {
  const fs = options.fs;
  const chain = directoryChain(path, options.root);
  const uid = effectiveUid();
  // A seam (fault injection) sees every call; only the real filesystem trusts ancestors.
  const nowMs = fs === undefined ? performance.now() : Number.NaN;
  const last = chain.length - 1;
  for (const [index, dir] of chain.entries()) {
    if (index < last && ancestorTrusted(dir, nowMs)) continue;
    const stats = fs === undefined ? lstatOrMissingSync(dir) : await lstatOrMissing(fs, dir);
    if (index === 0 && options.root !== undefined) {
      judgeQueueRoot(dir, stats);
    } else {
      if (stats === undefined) throw notFound(dir);
      refuseUnsafe(dir, stats, 'dir', uid);
    }
    if (fs === undefined) trustAncestor(dir, nowMs);
  }
}

/** Parent-directory check shared by every primitive that names a file. */
async function checkParentOf(path: string, options: SafeFsOptions): Promise<void> {
  await checkDirInside(dirname(path), options);
}

function validateEntryName(name: string, forRecord: boolean): void {
  const bad =
    name === '' ||
    name === '.' ||
    name === '..' ||
    name.includes('/') ||
    name.includes('\0') ||
    isTempName(name) ||
    Buffer.byteLength(name) > NAME_MAX_BYTES - (forRecord ? TEMP_NAME_OVERHEAD : 0);
  if (bad) {
    throw new FsjobError(
      'INVALID_ID',
      `${JSON.stringify(name)} is not a valid entry name: it must be non-empty, not start with ".", contain no "/" or NUL and be short enough for NAME_MAX`,
      { path: name },
    );
  }
}

/** True for names in the temp namespace (PUB-1): anything starting with ".". */
export function isTempName(name: string): boolean {
  return name.startsWith('.');
}

/**
 * mkdir 0700 (chmod explicitly, so umask cannot widen or narrow it), or when
 * it exists verify it is a private directory of ours (SEC-2/3/5/6). Without
 * `root` the parent is not checked: that is how a queue root itself is made
 * (its parent lies outside the queue). Returns true when it was created.
 */
export async function ensurePrivateDir(path: string, options: SafeFsOptions = {}): Promise<boolean> {
  const fs = seamOf(options);
  if (options.root !== undefined && resolve(path) !== resolve(options.root)) await checkParentOf(path, options);
  try {
    await fs.mkdir(path, { mode: PRIVATE_DIR_MODE });
  } catch (error) {
    const errno = errnoOf(error);
    if (errno === 'ENOENT') throw notFound(dirname(path));
    if (errno !== 'EEXIST') throw wrapIo(error, path, 'mkdir of');
    const stats = await lstatOrMissing(fs, path);
    if (stats === undefined) throw notFound(path);
    refuseUnsafe(path, stats, 'dir');
    return false;
  }
  // fchmod through an O_NOFOLLOW handle: a chmod by name would follow a link
  // planted between mkdir and here.
  await withDirHandle(fs, path, (handle) => handle.chmod(PRIVATE_DIR_MODE), 'chmod of');
  const stats = await lstatOrMissing(fs, path);
  if (stats === undefined) throw notFound(path);
  refuseUnsafe(path, stats, 'dir');
  return true;
}

async function withDirHandle(
  fs: SafeFsSeam,
  dir: string,
  use: (handle: SafeHandle) => Promise<void>,
  doing: string,
  clause?: string,
): Promise<void> {
  let handle: SafeHandle;
  try {
    handle = await fs.open(dir, DIR_SYNC_FLAGS);
  } catch (error) {
    const errno = errnoOf(error);
    // Linux answers O_DIRECTORY|O_NOFOLLOW on a symlink with ENOTDIR, not
    // ELOOP, so lstat to tell a link from a file.
    if (errno === 'ELOOP' || errno === 'ENOTDIR') {
      const stats = await lstatOrMissing(fs, dir);
      if (stats === undefined) throw notFound(dir);
      if (stats.isSymbolicLink()) throw symlinkRefused(dir);
      throw notRegular(dir, describeKind(stats), 'dir');
    }
    if (errno === 'ENOENT') throw notFound(dir);
    throw wrapIo(error, dir, `opening directory for ${doing}`, clause);
  }
  try {
    await use(handle);
  } catch (error) {
    throw wrapIo(error, dir, doing, clause);
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** PUB-5: fsync a directory so a link/rename/unlink in it is durable. */
export async function fsyncDir(dir: string, options: SafeFsOptions = {}): Promise<void> {
  await withDirHandle(seamOf(options), dir, (handle) => handle.sync(), 'fsync of directory', 'PUB-5');
}

export interface ReadBoundedOptions extends SafeFsOptions {
  /** Return undefined instead of throwing NOT_FOUND when the file is absent. */
  allowMissing?: boolean;
}

/**
 * Read a whole protocol file of at most `maxBytes` bytes (SEC-2..SEC-6).
 * Order: parent check, lstat (kind, size, owner, mode), open non-blocking
 * without following, fstat (same dev/ino, same checks), read at most
 * maxBytes+1 bytes.
 */
export async function readBounded(
  path: string,
  maxBytes: number,
  options: ReadBoundedOptions & { allowMissing: true },
): Promise<Buffer | undefined>;
export async function readBounded(path: string, maxBytes: number, options?: ReadBoundedOptions): Promise<Buffer>;
export async function readBounded(
  path: string,
  maxBytes: number,
  options: ReadBoundedOptions = {},
): Promise<Buffer | undefined> {
  const fs = seamOf(options);
  await checkParentOf(path, options);
  for (let attempt = 1; ; attempt++) {
    const before = await lstatOrMissing(fs, path);
    if (before === undefined) {
      if (options.allowMissing === true) return undefined;
      throw notFound(path);
    }
    refuseUnsafe(path, before, 'file');
    if (before.size > maxBytes) throw tooLarge(path, String(before.size), maxBytes);

    let handle: SafeHandle;
    try {
      handle = await fs.open(path, READ_FLAGS);
    } catch (error) {
      const errno = errnoOf(error);
      // Replaced or removed since the lstat: judge the new state afresh.
      if ((errno === 'ENOENT' || errno === 'ELOOP') && attempt < OPEN_ATTEMPTS) continue;
      if (errno === 'ENOENT') {
        if (options.allowMissing === true) return undefined;
        throw notFound(path);
      }
      if (errno === 'ELOOP') throw symlinkRefused(path);
      if (errno === 'ENXIO' || errno === 'EISDIR') throw notRegular(path, 'not a regular file', 'file');
      throw wrapIo(error, path, 'opening');
    }
    try {
      const opened = await handle.stat();
      if (opened.dev !== before.dev || opened.ino !== before.ino) {
        if (attempt < OPEN_ATTEMPTS) continue;
        throw new FsjobError(
          'IO',
          `${path} kept being replaced while it was opened; retry when writers are quiet`,
          { path, errno: 'EAGAIN' },
        );
      }
      refuseUnsafe(path, opened, 'file');
      if (opened.size > maxBytes) throw tooLarge(path, String(opened.size), maxBytes);
      return await readAtMost(handle, path, maxBytes);
    } catch (error) {
      throw wrapIo(error, path, 'reading');
    } finally {
      await handle.close().catch(() => undefined);
    }
  }
}

/**
 * Open a data file for reading and hand back the descriptor (the caller
 * closes it), with the checks of readBounded: parent directories, lstat, an
 * O_NOFOLLOW|O_NONBLOCK open, and an fstat that must show the same regular
 * file within `maxBytes` (SEC-2..SEC-6). Used for a job's `stdin`, which is
 * handed to a command as a descriptor rather than read into memory (EXEC-7).
 */
export async function openBounded(
  path: string,
  maxBytes: number,
  options: SafeFsOptions = {},
): Promise<{ handle: SafeHandle; size: number }> {
  const fs = seamOf(options);
  await checkParentOf(path, options);
  const before = await lstatOrMissing(fs, path);
  if (before === undefined) throw notFound(path);
  refuseUnsafe(path, before, 'file');
  if (before.size > maxBytes) throw tooLarge(path, String(before.size), maxBytes);
  let handle: SafeHandle;
  try {
    handle = await fs.open(path, READ_FLAGS);
  } catch (error) {
    const errno = errnoOf(error);
    if (errno === 'ENOENT') throw notFound(path);
    if (errno === 'ELOOP') throw symlinkRefused(path);
    if (errno === 'ENXIO' || errno === 'EISDIR') throw notRegular(path, 'not a regular file', 'file');
    throw wrapIo(error, path, 'opening');
  }
  try {
    const opened = await handle.stat();
    if (opened.dev !== before.dev || opened.ino !== before.ino) {
      throw new FsjobError('IO', `${path} was replaced while it was opened; retry`, { path, errno: 'EAGAIN' });
    }
    refuseUnsafe(path, opened, 'file');
    if (opened.size > maxBytes) throw tooLarge(path, String(opened.size), maxBytes);
    return { handle, size: opened.size };
  } catch (error) {
    await handle.close().catch(() => undefined);
    throw wrapIo(error, path, 'checking');
  }
}

export interface EntryStat {
  kind: EntryKind;
  size: number;
  mtimeMs: number;
}

/**
 * lstat of one entry inside a queue (never followed), after the parent
 * check; undefined when it does not exist. Only metadata: used to tell the
 * age of temporary files and ready entries (TEMP-1, READY-3) and whether a
 * record name is taken (CLAIM-7).
 */
export async function statEntry(path: string, options: SafeFsOptions = {}): Promise<EntryStat | undefined> {
  await checkParentOf(path, options);
  const stats = await lstatOrMissing(seamOf(options), path);
  return stats === undefined ? undefined : { kind: kindOfStats(stats), size: stats.size, mtimeMs: stats.mtimeMs };
}

/**
 * Whether an entry of any kind exists at `path` (one lstat, never followed),
 * WITHOUT the parent check statEntry makes: for hints over many entries of a
 * directory that was just listed and checked, where the answer only decides
 * whether to look closer (a finished job's receipt.json at start-up, READY-4).
 * Anything in the way that is not a directory reads as absent.
 */
export async function entryPresent(path: string, options: SafeFsOptions = {}): Promise<boolean> {
  try {
    await seamOf(options).lstat(path);
    return true;
  } catch (error) {
    const errno = errnoOf(error);
    if (errno === 'ENOENT' || errno === 'ENOTDIR') return false;
    throw wrapIo(error, path, 'lstat of');
  }
}

/** Reads until EOF but never more than maxBytes+1 bytes: the +1 proves growth. */
async function readAtMost(handle: SafeHandle, path: string, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  while (total <= maxBytes) {
    const want = Math.min(READ_CHUNK_BYTES, maxBytes + 1 - total);
    const chunk = Buffer.allocUnsafe(want);
    const { bytesRead } = await handle.read(chunk, 0, want, total);
    if (bytesRead === 0) break;
    chunks.push(bytesRead === want ? chunk : chunk.subarray(0, bytesRead));
    total += bytesRead;
  }
  if (total > maxBytes) throw tooLarge(path, `more than ${maxBytes}`, maxBytes);
  return Buffer.concat(chunks, total);
}

async function writeAll(handle: SafeHandle, bytes: Buffer): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, offset, bytes.length - offset, offset);
    // A zero-byte write would loop forever; the kernel reports ENOSPC instead
    // in practice, but a seam might not.
    if (bytesWritten <= 0) throw Object.assign(new Error('write made no progress'), { code: 'EIO' });
    offset += bytesWritten;
  }
}

/** Refuse a symlink or non-regular entry at a record's name before placing it. */
async function refuseBadTarget(fs: SafeFsSeam, target: string): Promise<Stats | undefined> {
  const stats = await lstatOrMissing(fs, target);
  if (stats === undefined) return undefined;
  if (stats.isSymbolicLink()) throw symlinkRefused(target);
  if (!stats.isFile()) throw notRegular(target, describeKind(stats), 'file');
  return stats;
}

function recordExists(target: string): FsjobError {
  return new FsjobError(
    'EXISTS',
    `${target} already exists; write-once records are never replaced (PUB-3). Read the existing record instead.`,
    { path: target, clause: 'PUB-3' },
  );
}

/**
 * Publish a record durably and atomically:
 * PUB-1 write to `.<name>.<16 hex>` in the same directory (exclusive, 0600);
 * PUB-2 write every byte and fsync it;
 * PUB-3 'link' placement: link(temp, target), EXISTS if the name is taken;
 * PUB-4 'rename' placement: rename(temp, target) replaces a previous version;
 * PUB-6 unlink the temp name after a link; on any failure before the commit
 *       point the temp file is removed and the target is untouched;
 * PUB-5 fsync the directory. The link/rename is the commit point: an error
 *       with clause PUB-5 means the record IS in place but its durability is
 *       unproven (the directory fsync failed).
 * Returns the target path.
 */
export async function publishRecord(
  dir: string,
  name: string,
  data: string | Buffer,
  placement: Placement,
  options: SafeFsOptions = {},
): Promise<string> {
  validateEntryName(name, true);
  const fs = seamOf(options);
  await checkDirInside(dir, options);
  const target = join(dir, name);
  const existing = await refuseBadTarget(fs, target);
  if (existing !== undefined && placement === 'link') throw recordExists(target);

  const temp = join(dir, `.${name}.${randomBytes(8).toString('hex')}`);
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  let tempExists = false;
  try {
    let handle: SafeHandle;
    try {
      handle = await fs.open(temp, CREATE_EXCLUSIVE_FLAGS, PRIVATE_FILE_MODE);
    } catch (error) {
      throw wrapIo(error, temp, 'creating temp file', 'PUB-1');
    }
    tempExists = true;
    try {
      await handle.chmod(PRIVATE_FILE_MODE).catch((error: unknown) => {
        throw wrapIo(error, temp, 'chmod of temp file', 'SEC-5');
      });
      await writeAll(handle, bytes).catch((error: unknown) => {
        throw wrapIo(error, temp, 'writing temp file', 'PUB-2');
      });
      await handle.sync().catch((error: unknown) => {
        throw wrapIo(error, temp, 'fsync of temp file', 'PUB-2');
      });
    } finally {
      await handle.close().catch(() => undefined);
    }

    if (placement === 'link') {
      try {
        await fs.link(temp, target);
      } catch (error) {
        if (errnoOf(error) === 'EEXIST') {
          await refuseBadTarget(fs, target);
          throw recordExists(target);
        }
        throw wrapIo(error, target, 'linking record into place', 'PUB-3');
      }
      // Committed. A leftover temp name is harmless garbage (GC removes dot
      // files), so failing to unlink it must not make the caller believe the
      // publish failed.
      tempExists = false;
      await fs.unlink(temp).catch(() => undefined);
    } else {
      try {
        await fs.rename(temp, target);
      } catch (error) {
        const errno = errnoOf(error);
        if (errno === 'EISDIR' || errno === 'ENOTEMPTY' || errno === 'EEXIST') {
          throw notRegular(target, 'a directory', 'file');
        }
        throw wrapIo(error, target, 'renaming record into place', 'PUB-4');
      }
      tempExists = false;
    }
  } finally {
    if (tempExists) await fs.unlink(temp).catch(() => undefined);
  }
  await fsyncDir(dir, options);
  return target;
}

/**
 * PUB-7: create a data file exclusively (O_CREAT|O_EXCL|O_NOFOLLOW), chmod it
 * to `mode` explicitly and hand back the open handle; the caller writes,
 * fsyncs and closes it. A symlink at the name is SYMLINK_REFUSED, anything
 * else there is EXISTS.
 */
export async function createExclusive(
  dir: string,
  name: string,
  mode: number = PRIVATE_FILE_MODE,
  options: SafeFsOptions = {},
): Promise<SafeHandle> {
  validateEntryName(name, false);
  if (mode !== (mode & 0o700)) {
    throw new FsjobError('USAGE', `mode ${octal(mode)} for ${name} must grant nothing beyond the owner (SEC-5)`, {
      path: join(dir, name),
      clause: 'SEC-5',
    });
  }
  const fs = seamOf(options);
  await checkDirInside(dir, options);
  const path = join(dir, name);
  let handle: SafeHandle;
  try {
    handle = await fs.open(path, CREATE_EXCLUSIVE_FLAGS, mode);
  } catch (error) {
    if (errnoOf(error) === 'EEXIST') {
      const stats = await lstatOrMissing(fs, path);
      if (stats?.isSymbolicLink() === true) throw symlinkRefused(path);
      throw new FsjobError('EXISTS', `${path} already exists; data files are created exclusively (PUB-7)`, {
        path,
        clause: 'PUB-7',
      });
    }
    throw wrapIo(error, path, 'creating', 'PUB-7');
  }
  try {
    await handle.chmod(mode);
  } catch (error) {
    await handle.close().catch(() => undefined);
    await fs.unlink(path).catch(() => undefined);
    throw wrapIo(error, path, 'chmod of', 'SEC-5');
  }
  return handle;
}

function kindOfDirent(entry: Dirent): EntryKind | undefined {
  if (entry.isFile()) return 'file';
  if (entry.isDirectory()) return 'dir';
  if (entry.isSymbolicLink()) return 'symlink';
  if (entry.isFIFO()) return 'fifo';
  if (entry.isSocket()) return 'socket';
  if (entry.isBlockDevice() || entry.isCharacterDevice()) return 'other';
  return undefined;
}

function kindOfStats(stats: Stats): EntryKind {
  if (stats.isFile()) return 'file';
  if (stats.isDirectory()) return 'dir';
  if (stats.isSymbolicLink()) return 'symlink';
  if (stats.isFIFO()) return 'fifo';
  if (stats.isSocket()) return 'socket';
  return 'other';
}

/**
 * List a queue directory without following anything. Kinds come from d_type;
 * where the filesystem reports DT_UNKNOWN the entry is lstat-ed. Entries that
 * vanish while listing are left out. Sorted by name.
 */
export async function listDir(dir: string, options: SafeFsOptions = {}): Promise<DirEntry[]> {
  const fs = seamOf(options);
  await checkDirInside(dir, options);
  let dirents: Dirent[];
  try {
    dirents = await fs.readdir(dir, { withFileTypes: true });
  } catch (error) {
    // Node itself lstats DT_UNKNOWN entries and fails the whole readdir when
    // one vanished meanwhile; fall back to names and our own tolerant lstat.
    if (errnoOf(error) !== 'ENOENT' || (await lstatOrMissing(fs, dir)) === undefined) {
      throw error instanceof FsjobError ? error : listFailure(error, dir);
    }
    return listByLstat(fs, dir);
  }
  const entries: DirEntry[] = [];
  for (const entry of dirents) {
    const kind = kindOfDirent(entry) ?? (await lstatKind(fs, join(dir, entry.name)));
    if (kind !== undefined) entries.push({ name: entry.name, kind });
  }
  return entries.sort(byName);
}

function listFailure(error: unknown, dir: string): FsjobError {
  if (errnoOf(error) === 'ENOENT') return notFound(dir);
  return wrapIo(error, dir, 'listing');
}

async function lstatKind(fs: SafeFsSeam, path: string): Promise<EntryKind | undefined> {
  const stats = await lstatOrMissing(fs, path);
  return stats === undefined ? undefined : kindOfStats(stats);
}

async function listByLstat(fs: SafeFsSeam, dir: string): Promise<DirEntry[]> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (error) {
    throw listFailure(error, dir);
  }
  const entries: DirEntry[] = [];
  for (const name of names) {
    const kind = await lstatKind(fs, join(dir, name));
    if (kind !== undefined) entries.push({ name, kind });
  }
  return entries.sort(byName);
}

function byName(a: DirEntry, b: DirEntry): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * Move a staged directory into place without replacing anything. Linux
 * rename() silently replaces an EMPTY directory, so dst is lstat-ed first and
 * an existing entry is EXISTS. Residual race: an empty directory created at
 * dst between that lstat and the rename would be replaced. Staged names carry
 * 64 random bits, so only a writer deliberately reusing the same id (who
 * already has our uid, see SEC-5/6) can hit it. Both parents are fsynced.
 */
export async function renameNoReplace(src: string, dst: string, options: SafeFsOptions = {}): Promise<void> {
  const fs = seamOf(options);
  await checkParentOf(src, options);
  await checkParentOf(dst, options);
  const staged = await lstatOrMissing(fs, src);
  if (staged === undefined) throw notFound(src);
  refuseUnsafe(src, staged, 'dir');
  const taken = (): FsjobError =>
    new FsjobError('EXISTS', `${dst} already exists; a staged directory never replaces one. Pick a new id.`, {
      path: dst,
    });
  const occupant = await lstatOrMissing(fs, dst);
  if (occupant?.isSymbolicLink() === true) throw symlinkRefused(dst);
  if (occupant !== undefined) throw taken();
  try {
    await fs.rename(src, dst);
  } catch (error) {
    const errno = errnoOf(error);
    if (errno === 'EEXIST' || errno === 'ENOTEMPTY' || errno === 'ENOTDIR') throw taken();
    if (errno === 'ENOENT') throw notFound(src);
    throw wrapIo(error, dst, `renaming ${src} to`);
  }
  // Both parents at once (their fsyncs overlap on the disk); a failure of
  // dst's is the one that matters (ENQ-4), so it is the one reported.
  const syncs = [fsyncDir(dirname(dst), options)];
  if (dirname(dst) !== dirname(src)) syncs.push(fsyncDir(dirname(src), options));
  await settleAll(syncs);
}

/**
 * A promise whose outcome a caller collects later (with settleAll) while it
 * awaits other steps meanwhile: marked as handled now, so a failure that
 * comes first is not an unhandled rejection (which ends the process).
 */
export function later<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

/**
 * Waits for every promise to settle, then throws the first rejection in
 * array order: concurrent durability steps are all finished (or failed)
 * before a caller reacts to one of them.
 */
export async function settleAll(promises: readonly Promise<unknown>[]): Promise<void> {
  const results = await Promise.allSettled(promises);
  for (const result of results) if (result.status === 'rejected') throw result.reason;
}

/**
 * Remove a file or a whole tree for garbage collection. Never follows a
 * symlink: a link anywhere in the tree (or at `path` itself) is unlinked, its
 * target is untouched (Node's fs.rm lstats every entry and unlinks
 * non-directories; test/fs/safefs.test.ts pins this). FIFOs are unlinked, never
 * opened. Returns false when there was nothing to remove.
 */
export async function removeTree(path: string, options: SafeFsOptions = {}): Promise<boolean> {
  const fs = seamOf(options);
  if (basename(path) === '' || resolve(path) === '/') {
    throw new FsjobError('USAGE', `refusing to remove ${JSON.stringify(path)}: not an entry inside a queue`, { path });
  }
  await checkParentOf(path, options);
  const stats = await lstatOrMissing(fs, path);
  if (stats === undefined) return false;
  try {
    // Most removals are one file (a ready entry, a temp name): a plain unlink,
    // which never follows a link either.
    if (!stats.isDirectory()) {
      await fs.unlink(path).catch((error: unknown) => {
        if (errnoOf(error) !== 'ENOENT') throw error;
      });
      return true;
    }
    await fs.rm(path, { recursive: true, force: true, maxRetries: 0 });
  } catch (error) {
    throw wrapIo(error, path, 'removing');
  }
  return true;
}

// ---------------------------------------------------------------------------
// Synchronous, read-only primitives for whole-queue audits (fsjob validate).
//
// A validator examines every entry of a queue once. Its walk lstat-checks each
// directory itself, once, so these primitives do not re-check parents. An
// asynchronous call costs a thread-pool round trip, which dominates when a
// queue holds 100,000 small files (bench/validate.bench.ts); these make the
// same checks with synchronous calls. They never write, never follow a link,
// and open nothing but names a listing reported as regular files (with
// O_NONBLOCK|O_NOFOLLOW besides, so a file swapped for a FIFO or a link
// meanwhile still cannot block or be followed).

/** O_NOATIME where the platform has it: an audit leaves access times alone. */
const O_NOATIME = (constants as unknown as Record<string, number | undefined>)['O_NOATIME'] ?? 0;

/**
 * List a directory without following anything: kinds come from d_type, and an
 * entry whose type the filesystem does not report is lstat-ed. Entries that
 * vanish meanwhile are left out. Sorted by name. Throws NOT_FOUND or IO.
 */
export function listDirSync(dir: string): DirEntry[] {
  let dirents: Dirent[];
  try {
    dirents = readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    throw listFailure(error, dir);
  }
  const entries: DirEntry[] = [];
  for (const entry of dirents) {
    let kind = kindOfDirent(entry);
    if (kind === undefined) {
      const stats = lstatIfExistsSync(join(dir, entry.name));
      if (stats === undefined) continue;
      kind = kindOfStats(stats);
    }
    entries.push({ name: entry.name, kind });
  }
  return entries.sort(byName);
}

/** lstat, or undefined when nothing is there. Throws IO for other failures. */
export function lstatIfExistsSync(path: string): Stats | undefined {
  try {
    return lstatSync(path, { throwIfNoEntry: false });
  } catch (error) {
    if (errnoOf(error) === 'ENOTDIR') return undefined;
    throw wrapIo(error, path, 'lstat of');
  }
}

export interface BoundedReadSync {
  /** fstat of the opened file: a regular file of ours, not group- or other-writable, within the bound. */
  stats: Stats;
  /** The content, unless options.hash took it. */
  bytes: Buffer | undefined;
}

export interface ReadBoundedSyncOptions {
  /** Takes the content chunk by chunk instead, through hash.update() (hashing a large file in bounded memory). */
  hash?: Pick<Hash, 'update'>;
  /** Read into this buffer when it is large enough; the result is then a view of it, valid until its next use. */
  scratch?: Buffer;
  /** The uid files must belong to (SEC-6); defaults to the effective uid, asked of the kernel each time. */
  uid?: number;
}

/**
 * SEC-2..SEC-6 for one regular file, synchronously: open with
 * O_RDONLY|O_NOFOLLOW|O_NONBLOCK (and O_NOATIME when permitted), fstat (a
 * regular file, our uid, not group- or other-writable, at most maxBytes),
 * then read at most maxBytes+1 bytes so a file that grew is caught too.
 * Throws the refusals readBounded throws (SYMLINK_REFUSED, NOT_REGULAR,
 * FOREIGN_OWNER, UNSAFE_MODE, TOO_LARGE), NOT_FOUND, or IO. The parent
 * directory is NOT checked: the caller walked and checked it.
 */
export function readBoundedSync(path: string, maxBytes: number, options: ReadBoundedSyncOptions = {}): BoundedReadSync {
  const fd = openForReadSync(path);
  try {
    let stats: Stats;
    try {
      stats = fstatSync(fd);
    } catch (error) {
      throw wrapIo(error, path, 'fstat of');
    }
    refuseUnsafe(path, stats, 'file', options.uid);
    if (stats.size > maxBytes) throw tooLarge(path, String(stats.size), maxBytes);
    if (options.hash !== undefined) {
      streamAtMostSync(fd, path, maxBytes, stats.size, options.hash, options.scratch);
      return { stats, bytes: undefined };
    }
    return { stats, bytes: readAtMostSync(fd, path, maxBytes, stats.size, options.scratch) };
  } finally {
    try {
      closeSync(fd);
    } catch {
      // closing a read-only descriptor cannot lose anything
    }
  }
}

function openForReadSync(path: string): number {
  try {
    return openSync(path, READ_FLAGS | O_NOATIME);
  } catch (error) {
    // O_NOATIME is for the file's owner: open without it, and let fstat refuse a foreign file.
    if (!(errnoOf(error) === 'EPERM' && O_NOATIME !== 0)) throw openFailureSync(error, path);
  }
  try {
    return openSync(path, READ_FLAGS);
  } catch (error) {
    throw openFailureSync(error, path);
  }
}

function openFailureSync(error: unknown, path: string): FsjobError {
  const errno = errnoOf(error);
  if (errno === 'ENOENT') return notFound(path);
  if (errno === 'ELOOP') return symlinkRefused(path);
  if (errno === 'ENXIO' || errno === 'EISDIR') return notRegular(path, 'not a regular file', 'file');
  return wrapIo(error, path, 'opening');
}

function readChunkSync(fd: number, path: string, buffer: Buffer, offset: number, position: number): number {
  try {
    return readSync(fd, buffer, offset, buffer.length - offset, position);
  } catch (error) {
    throw wrapIo(error, path, 'reading');
  }
}

/**
 * Reads the whole file into one buffer sized expected+1: a short read of a
 * regular file is its end, so a file that did not grow costs one read(2).
 */
function readAtMostSync(fd: number, path: string, maxBytes: number, expected: number, scratch: Buffer | undefined): Buffer {
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
    const bytesRead = readChunkSync(fd, path, buffer, total, total);
    total += bytesRead;
    if (total > maxBytes) throw tooLarge(path, `more than ${maxBytes}`, maxBytes);
    // A short read at or past the size fstat gave is the end (regular files read short only at EOF).
    if (bytesRead === 0 || (bytesRead < room && total >= expected)) break;
  }
  return buffer.subarray(0, total);
}

function streamAtMostSync(fd: number, path: string, maxBytes: number, expected: number, hash: Pick<Hash, 'update'>, scratch: Buffer | undefined): void {
  const size = Math.min(READ_CHUNK_BYTES, maxBytes + 1);
  const buffer = scratch !== undefined && scratch.length >= size ? scratch.subarray(0, size) : Buffer.allocUnsafe(size);
  let total = 0;
  for (;;) {
    const bytesRead = readChunkSync(fd, path, buffer, 0, total);
    total += bytesRead;
    if (total > maxBytes) throw tooLarge(path, `more than ${maxBytes}`, maxBytes);
    if (bytesRead > 0) hash.update(buffer.subarray(0, bytesRead));
    if (bytesRead === 0 || (bytesRead < buffer.length && total >= expected)) break;
  }
}
