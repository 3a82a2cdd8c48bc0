/**
 * The refusals of SEC-2..SEC-6 and the entry-name rules, as pure functions
 * over an lstat or fstat result: every primitive of src/fs judges what it
 * finds with these, so one rule has one wording and one clause.
 */
import { constants, lstatSync } from 'node:fs';
import type { Dirent, Stats } from 'node:fs';
import { join } from 'node:path';
import { FsjobError, errnoOf } from '../base/errors.ts';
import { wrapIo } from './io-error.ts';

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
/** O_NOATIME where the platform has it: an audit leaves access times alone (the owner of a file only). */
export const O_NOATIME = (constants as unknown as Record<string, number | undefined>)['O_NOATIME'] ?? 0;

const GROUP_OR_OTHER_WRITE = 0o022;
// ".<name>.<16 hex>" must still fit NAME_MAX (255 bytes).
const TEMP_NAME_OVERHEAD = 1 + 1 + 16;
const NAME_MAX_BYTES = 255;

// Only POSIX is supported; geteuid exists there. fsjob never changes its
// euid, so asking once saves a system call per check (~40 per job).
export const EUID = process.geteuid?.() ?? 0;

export type EntryKind = 'file' | 'dir' | 'symlink' | 'fifo' | 'socket' | 'other';

export interface DirEntry {
  name: string;
  kind: EntryKind;
}

const KIND_WORDS: Readonly<Record<Exclude<EntryKind, 'other'>, string>> = {
  file: 'a regular file',
  dir: 'a directory',
  symlink: 'a symbolic link',
  fifo: 'a FIFO',
  socket: 'a socket',
};

export function describeKind(stats: Stats): string {
  const kind = kindOfStats(stats);
  if (kind !== 'other') return KIND_WORDS[kind];
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isCharacterDevice()) return 'a character device';
  return 'a special file';
}

export function octal(mode: number): string {
  return `0${(mode & 0o7777).toString(8)}`;
}

export function symlinkRefused(path: string): FsjobError {
  return new FsjobError(
    'SYMLINK_REFUSED',
    `${path} is a symbolic link; fsjob never follows links inside a queue (SEC-2). Remove the link and put the real entry there.`,
    { path, clause: 'SEC-2' },
  );
}

export function notRegular(path: string, what: string, wanted: 'file' | 'dir'): FsjobError {
  const belongs = wanted === 'file' ? 'a regular file' : 'a directory';
  return new FsjobError(
    'NOT_REGULAR',
    `${path} is ${what} where ${belongs} belongs (SEC-3); fsjob refuses it without opening it. Remove it.`,
    { path, clause: 'SEC-3' },
  );
}

export function notFound(path: string): FsjobError {
  return new FsjobError('NOT_FOUND', `${path} does not exist; check the path or create it first`, { path });
}

export function tooLarge(path: string, size: string, maxBytes: number): FsjobError {
  return new FsjobError(
    'TOO_LARGE',
    `${path} is ${size} bytes, over the ${maxBytes}-byte bound (SEC-4); it is refused unread. Remove or shrink it.`,
    { path, clause: 'SEC-4' },
  );
}

export function recordExists(target: string): FsjobError {
  return new FsjobError(
    'EXISTS',
    `${target} already exists; write-once records are never replaced (PUB-3). Read the existing record instead.`,
    { path: target, clause: 'PUB-3' },
  );
}

/** SEC-2/3/5/6 on one lstat or fstat result. */
export function refuseUnsafe(path: string, stats: Stats, wanted: 'file' | 'dir', uid: number = EUID): void {
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

/** SEC-1 on the lstat result of a queue root (undefined: nothing there). */
export function judgeQueueRoot(root: string, stats: Stats | undefined): void {
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
  if (stats.uid !== EUID) throw unsafe(`is owned by uid ${stats.uid}, not ${EUID}`, "run fsjob as the queue's owner");
  if ((stats.mode & GROUP_OR_OTHER_WRITE) !== 0) throw unsafe(`has mode ${octal(stats.mode)}, writable by group or others`, sharedDirectoryAdvice(root, stats));
}

/**
 * What to do about a queue root others can write. A queue whose mode was
 * widened (it holds fsjob.json) is narrowed again. Any other such directory
 * is shared (/tmp, a team's directory): narrowing it would break its other
 * users, and it is not a queue anyway, so the advice is a queue of one's own
 * inside it.
 */
function sharedDirectoryAdvice(root: string, stats: Stats): string {
  const sticky = (stats.mode & 0o1000) !== 0; // S_ISVTX: only owners may remove entries, the mark of a shared directory
  let holdsQueue = false;
  try {
    holdsQueue = lstatSync(join(root, 'fsjob.json')).isFile();
  } catch {
    // Not there, or not readable: either way not a queue to narrow.
  }
  if (holdsQueue && !sticky) return 'if the queue is yours alone, run chmod 700 on it';
  return `it is a directory others share, not a queue: make a queue of your own inside it (fsjob init --queue ${join(root, 'fsjob-queue')}), and leave its mode alone`;
}

/** An lstat failure: ENOENT is "nothing there" (undefined); other errnos are refusals or IO. */
export function missingOrThrow(error: unknown, path: string): undefined {
  const errno = errnoOf(error);
  if (errno === 'ENOENT') return undefined;
  if (errno === 'ENOTDIR') throw notRegular(path, 'under something that is not a directory', 'file');
  if (errno === 'ELOOP') throw symlinkRefused(path);
  throw wrapIo(error, path, 'lstat of');
}

/** True for names in the temp namespace (PUB-1): anything starting with ".". */
export function isTempName(name: string): boolean {
  return name.startsWith('.');
}

/** At most this many UTF-16 units can never be more than NAME_MAX bytes of UTF-8 (3 bytes per unit at most). */
const SURELY_SHORT = Math.floor(NAME_MAX_BYTES / 3);

/** One path component: not empty, not "." or "..", no "/" or NUL (temporary names allowed). */
export function validateComponent(name: string): void {
  // Called for every entry a call names: the byte length is counted only for a name that might exceed NAME_MAX.
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0') || (name.length > SURELY_SHORT && Buffer.byteLength(name) > NAME_MAX_BYTES)) {
    throw new FsjobError('INVALID_ID', `${JSON.stringify(name).slice(0, 80)} is not one entry name of a directory (empty, "." or "..", or holding "/" or NUL)`, { path: name });
  }
}

/** A single, non-temporary component that fits NAME_MAX (with room for a temp name when it names a record). */
export function validateEntryName(name: string, forRecord: boolean): void {
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

export function kindOfDirent(entry: Dirent): EntryKind | undefined {
  if (entry.isFile()) return 'file';
  if (entry.isDirectory()) return 'dir';
  if (entry.isSymbolicLink()) return 'symlink';
  if (entry.isFIFO()) return 'fifo';
  if (entry.isSocket()) return 'socket';
  if (entry.isBlockDevice() || entry.isCharacterDevice()) return 'other';
  return undefined;
}

export function kindOfStats(stats: Stats): EntryKind {
  if (stats.isFile()) return 'file';
  if (stats.isDirectory()) return 'dir';
  if (stats.isSymbolicLink()) return 'symlink';
  if (stats.isFIFO()) return 'fifo';
  if (stats.isSocket()) return 'socket';
  return 'other';
}

export function byName(a: DirEntry, b: DirEntry): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
