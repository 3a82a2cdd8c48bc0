/**
 * The only code that touches protocol files. Everything else in fsjob reads,
 * writes, lists and removes queue entries through src/fs, so the security and
 * durability rules live in one place. This module is the layer's public face;
 * the work is done in:
 *
 *   checks.ts  the refusals of SEC-2..SEC-6 and the entry-name rules
 *   chain.ts   the directories above a target (SEC-1, and what is checked
 *              when, since Node has no openat)
 *   steps.ts   the one implementation of every read (synchronous calls, the
 *              real ones or a test's)
 *   read.ts    bounded reads, listings, lstats
 *   write.ts   publishRecord, createExclusive, private directories, fsync,
 *              renameNoReplace (moveNoReplace without its fsyncs), removeTree
 *   shared-sync.ts one fsync shared by every caller waiting for it (group commit)
 *   dir.ts     a directory handle: names relative to a directory checked per call
 *   open-dir.ts a held directory handle: checked once per visit, names resolved
 *              inside the opened directory (/proc/self/fd), what a check no
 *              longer sees
 *   flush.ts   where an fsync runs: inline when nothing else is in flight,
 *              else on libuv's pool
 *   seam.ts    the system calls, as an injectable seam
 *   fs-lack.ts a filesystem without FS-1's operations (FS-2), FS-3's second look
 *   probe.ts   FS-2's probe of a queue's filesystem
 *
 * Guarantees (clause ids are the ones carried by the errors thrown):
 * - SEC-1 `checkQueueRoot`: the root is a real directory (not a symlink), owned
 *   by the effective uid and not writable by group or others.
 * - SEC-2 no path inside a queue is followed when it is a symlink. Final
 *   components are opened with O_NOFOLLOW; directories above them are lstat-
 *   checked first because O_NOFOLLOW only protects the last component. Without
 *   the `root` option only the immediate parent directory is checked; with it,
 *   every directory from the root down (the parent on every call, those above
 *   it again once a passing check is ANCESTOR_TRUST_MS old: chain.ts).
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
 */
export { CREATE_EXCLUSIVE_FLAGS, DIR_SYNC_FLAGS, PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, READ_FLAGS, isTempName, type DirEntry, type EntryKind } from './checks.ts';
export { AncestorTrust, ANCESTOR_TRUST_MS, checkDirInside, checkQueueRoot, dirPresent, type SafeFsOptions } from './chain.ts';
export {
  entryPresent,
  listDir,
  listDirSync,
  lstatIfExistsSync,
  openBounded,
  readBounded,
  readBoundedSync,
  statEntry,
  type BoundedReadSync,
  type EntryStat,
  type ReadBoundedOptions,
  type ReadBoundedSyncOptions,
} from './read.ts';
export { createExclusive, ensurePrivateDir, fsyncDir, later, moveIn, moveNoReplace, publishRecord, removeTree, renameNoReplace, settleAll, writeAll, type Placement } from './write.ts';
export { SharedSync } from './shared-sync.ts';
export { realReads, type ReadCalls, type SafeFsSeam, type SafeHandle } from './seam.ts';
export { Dir } from './dir.ts';
export { OpenDir, heldFor, heldHandles } from './open-dir.ts';
export { beginOperation, together } from './flush.ts';
export { probeFilesystem } from './probe.ts';
