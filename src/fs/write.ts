/**
 * Writing a queue: the one primitive that publishes a record
 * (`publishRecord`, PUB-1..PUB-6), the one that creates a data file
 * exclusively (`createExclusive`, PUB-7), and the directory steps around
 * them: a private directory (SEC-5), a directory fsync (PUB-5), a staged
 * directory moved into place without replacing anything (ENQ-3, GC-1), and a
 * removal that never follows a link (READY-2, TEMP-1, GC-1).
 */
import { openSync, unlinkSync, type Stats } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { randomHex } from '../base/random.ts';
import { FsjobError, errnoOf } from '../base/errors.ts';
import { promised, type Soon } from '../base/soon.ts';
import {
  CREATE_EXCLUSIVE_FLAGS,
  DIR_SYNC_FLAGS,
  PRIVATE_DIR_MODE,
  PRIVATE_FILE_MODE,
  describeKind,
  notFound,
  notRegular,
  octal,
  recordExists,
  refuseUnsafe,
  symlinkRefused,
  validateEntryName,
} from './checks.ts';
import { DirRef, checkDirInside, type SafeFsOptions } from './chain.ts';
import { wrapIo } from './io-error.ts';
import { filesystemLack, holdsOwnRecord } from './fs-lack.ts';
import { fsyncFd, inlineNow } from './flush.ts';
import { badTargetNow, fileModeNeedsChmod, linkRefusal, lookBeforePublish, publishNow, renameRefusal, writeAllNow } from './publish-now.ts';
import { directFdOf, directFs, directHandle, type SafeFsSeam, type SafeHandle } from './seam.ts';
import { lstatOrMissing, readsOf } from './steps.ts';

export type Placement = 'link' | 'rename';

/** Options of publishIn (publish-now.ts's road takes them too). */
export interface PublishOptions {
  /**
   * Look at the target before writing anything: a taken name is EXISTS (or
   * a refusal) with no temporary file made, also on a read-only mount (an
   * idempotent init). A record whose name is almost always free (a claim,
   * an exec record, a receipt) skips the look: link() fails on any entry
   * there, a symlink included, and the entry is looked at only then (to
   * say which it is, and for FS-3). A rename always looks first, since it
   * would replace a planted link. @default true
   */
  lookFirst?: boolean;
  /**
   * Called once the temp file is durable, just before a link commits it;
   * what it resolves to is called once the link is tried. A caller with
   * several publications in flight that must commit in its own order (a
   * Worker's claims, CLAIM-1) waits for its turn there, so the writes and
   * fsyncs still overlap and only the links queue. @default none
   */
  commitTurn?: () => Promise<() => void>;
}

function seamOf(options: SafeFsOptions | undefined): SafeFsSeam {
  return options?.fs ?? directFs;
}

async function lstatOf(options: SafeFsOptions, path: string, shown: string = path): Promise<Stats | undefined> {
  return lstatOrMissing(readsOf(options.fs), path, shown);
}

/** PUB-5 for a directory handle: its own descriptor when it is held open, else open, fsync, close. */
export function syncDirOf(ref: DirRef): Promise<void> {
  const fd = ref.fd;
  return fd === undefined ? fsyncDir(ref.path, ref.options) : fsyncFd(fd, ref);
}

/**
 * mkdir 0700 (chmod explicitly, so umask cannot widen or narrow it), or when
 * it exists verify it is a private directory of ours (SEC-2/3/5/6). Without
 * `root` the parent is not checked: that is how a queue root itself is made
 * (its parent lies outside the queue). Returns true when it was created.
 */
export async function ensurePrivateDir(path: string, options: SafeFsOptions = {}): Promise<boolean> {
  const fs = seamOf(options);
  if (options.root !== undefined && resolve(path) !== resolve(options.root)) await checkDirInside(dirname(path), options);
  try {
    await fs.mkdir(path, { mode: PRIVATE_DIR_MODE });
  } catch (error) {
    const errno = errnoOf(error);
    if (errno === 'ENOENT') throw notFound(dirname(path));
    if (errno !== 'EEXIST') throw wrapIo(error, path, 'mkdir of');
    const stats = await lstatOf(options, path);
    if (stats === undefined) throw notFound(path);
    refuseUnsafe(path, stats, 'dir');
    return false;
  }
  // fchmod through an O_NOFOLLOW handle: a chmod by name would follow a link
  // planted between mkdir and here.
  await withDirHandle(options, path, (handle) => handle.chmod(PRIVATE_DIR_MODE), 'chmod of');
  const stats = await lstatOf(options, path);
  if (stats === undefined) throw notFound(path);
  refuseUnsafe(path, stats, 'dir');
  return true;
}

async function withDirHandle(options: SafeFsOptions, dir: string, use: (handle: SafeHandle) => Promise<void>, doing: string, clause?: string): Promise<void> {
  let handle: SafeHandle;
  try {
    handle = await seamOf(options).open(dir, DIR_SYNC_FLAGS);
  } catch (error) {
    const errno = errnoOf(error);
    // Linux answers O_DIRECTORY|O_NOFOLLOW on a symlink with ENOTDIR, not
    // ELOOP, so lstat to tell a link from a file.
    if (errno === 'ELOOP' || errno === 'ENOTDIR') {
      const stats = await lstatOf(options, dir);
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
  await withDirHandle(options, dir, (handle) => handle.sync(), 'fsync of directory', 'PUB-5');
}

/** Every byte of `bytes` at offset 0 on, through as many writes as it takes. */
export async function writeAll(handle: SafeHandle, bytes: Uint8Array): Promise<void> {
  const fd = directFdOf(handle);
  if (fd !== undefined) return writeAllNow(fd, bytes);
  let offset = 0;
  while (offset < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, offset, bytes.length - offset, offset);
    // A zero-byte write would loop forever; the kernel reports ENOSPC instead
    // in practice, but a seam might not.
    if (bytesWritten <= 0) throw Object.assign(new Error('write made no progress'), { code: 'EIO' });
    offset += bytesWritten;
  }
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
export async function publishRecord(dir: string, name: string, data: string | Buffer, placement: Placement, options: SafeFsOptions = {}): Promise<string> {
  return publishIn(new DirRef(dir, options), name, data, placement);
}

/** publishRecord in a directory handle's directory. */
export function publishIn(ref: DirRef, name: string, data: string | Buffer, placement: Placement, options: PublishOptions = {}): Promise<string> {
  return promised(() => publishSoon(ref, name, data, placement, options));
}

/**
 * publishIn, done before it returns where publish-now.ts's road is open (a
 * held directory on the real filesystem, fsyncs inline, no commit turn to
 * wait for): the target path, or what went wrong thrown; else the promise of
 * the road below. A caller that can go on at once (a payload job whose
 * handler returned, spec/design-consumer-writes-costs.md) uses it; publishIn
 * is it wrapped in a promise.
 */
export function publishSoon(ref: DirRef, name: string, data: string | Buffer, placement: Placement, options: PublishOptions = {}): Soon<string> {
  const held = ref.fd;
  if (held !== undefined && ref.options.fs === undefined && options.commitTurn === undefined && inlineNow()) return publishNow(ref, held, name, data, placement, options.lookFirst !== false);
  return publishLater(ref, name, data, placement, options);
}

/** publishIn's steps, each awaited: through a seam, a directory named by its path, a commit turn or fsyncs bound for the pool. */
async function publishLater(ref: DirRef, name: string, data: string | Buffer, placement: Placement, options: PublishOptions): Promise<string> {
  validateEntryName(name, true);
  const fs = seamOf(ref.options);
  ref.check();
  const target = lookBeforePublish(ref, name, placement, options.lookFirst !== false);

  const tempName = `.${name}.${randomHex(8)}`;
  const temp = ref.entry(tempName);
  const tempAt = ref.at(tempName);
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  let tempExists = false;
  try {
    let handle: SafeHandle;
    try {
      handle = await fs.open(tempAt, CREATE_EXCLUSIVE_FLAGS, PRIVATE_FILE_MODE);
    } catch (error) {
      throw wrapIo(error, temp, 'creating temp file', 'PUB-1');
    }
    tempExists = true;
    // One try for the three steps, the step named as it starts: a .catch per step made a promise and a closure each.
    let step: 'chmod of temp file' | 'writing temp file' | 'fsync of temp file' = 'chmod of temp file';
    try {
      if (fileModeNeedsChmod()) await handle.chmod(PRIVATE_FILE_MODE);
      step = 'writing temp file';
      await writeAll(handle, bytes);
      step = 'fsync of temp file';
      await handle.sync();
    } catch (error) {
      throw wrapIo(error, temp, step, step === 'chmod of temp file' ? 'SEC-5' : 'PUB-2');
    } finally {
      try {
        await handle.close();
      } catch {
        // A close that fails after the fsync (or after the error above) loses nothing.
      }
    }

    if (placement === 'link') {
      const turnDone = await options.commitTurn?.();
      try {
        await fs.link(tempAt, ref.at(name));
      } catch (error) {
        if (errnoOf(error) !== 'EEXIST') throw linkRefusal(error, target);
        const occupant = badTargetNow(ref, name);
        // FS-3: a retransmitted link says EEXIST for the link it made.
        if (occupant === undefined || !(await holdsOwnRecord(ref, tempName, name, occupant, bytes))) throw recordExists(target);
      } finally {
        turnDone?.();
      }
      // Committed. A leftover temp name is harmless garbage (GC removes dot
      // files), so failing to unlink it must not make the caller believe the
      // publish failed.
      tempExists = false;
      try {
        await fs.unlink(tempAt);
      } catch {
        // harmless garbage, as said above
      }
    } else {
      try {
        await fs.rename(tempAt, ref.at(name));
      } catch (error) {
        throw renameRefusal(error, target);
      }
      tempExists = false;
    }
  } finally {
    if (tempExists) await fs.unlink(tempAt).catch(() => undefined); // the error path only
  }
  try {
    await syncDirOf(ref);
  } catch (error) {
    throw wrapIo(error, ref.path, 'fsync of directory', 'PUB-5');
  }
  return target;
}

/**
 * PUB-7: create a data file exclusively (O_CREAT|O_EXCL|O_NOFOLLOW), chmod it
 * to `mode` explicitly where the umask narrows it, and hand back the open
 * handle; the caller writes, fsyncs and closes it. A symlink at the name is
 * SYMLINK_REFUSED, anything else there is EXISTS.
 */
export async function createExclusive(dir: string, name: string, mode: number = PRIVATE_FILE_MODE, options: SafeFsOptions = {}): Promise<SafeHandle> {
  return createIn(new DirRef(dir, options), name, mode);
}

/** createExclusive in a directory handle's directory. */
export async function createIn(ref: DirRef, name: string, mode: number = PRIVATE_FILE_MODE): Promise<SafeHandle> {
  validateEntryName(name, false);
  const path = ref.entry(name);
  if (mode !== (mode & 0o700)) {
    throw new FsjobError('USAGE', `mode ${octal(mode)} for ${name} must grant nothing beyond the owner (SEC-5)`, { path, clause: 'SEC-5' });
  }
  const { options } = ref;
  const fs = seamOf(options);
  ref.check();
  const at = ref.at(name);
  let handle: SafeHandle;
  try {
    // directFs's open is this call (seam.ts); without a seam it is made here, without a promise.
    handle = options.fs === undefined ? directHandle(openSync(at, CREATE_EXCLUSIVE_FLAGS, mode)) : await fs.open(at, CREATE_EXCLUSIVE_FLAGS, mode);
  } catch (error) {
    if (errnoOf(error) === 'EEXIST') {
      const stats = await lstatOf(options, at, path);
      if (stats?.isSymbolicLink() === true) throw symlinkRefused(path);
      throw new FsjobError('EXISTS', `${path} already exists; data files are created exclusively (PUB-7)`, {
        path,
        clause: 'PUB-7',
      });
    }
    throw wrapIo(error, path, 'creating', 'PUB-7');
  }
  // The umask may only clear bits: a mode it leaves whole needs no chmod.
  if (fileModeNeedsChmod(mode)) {
    try {
      await handle.chmod(mode);
    } catch (error) {
      await handle.close().catch(() => undefined);
      await fs.unlink(at).catch(() => undefined);
      throw wrapIo(error, path, 'chmod of', 'SEC-5');
    }
  }
  return handle;
}

/**
 * Move a staged directory into place without replacing anything, and fsync
 * both parents (PUB-9). See `moveNoReplace` for the refusal.
 */
export async function renameNoReplace(src: string, dst: string, options: SafeFsOptions = {}): Promise<void> {
  await moveNoReplace(src, dst, options);
  // Both parents at once (their fsyncs overlap on the disk); a failure of
  // dst's is the one that matters (ENQ-4), so it is the one reported.
  const syncs = [fsyncDir(dirname(dst), options)];
  if (dirname(dst) !== dirname(src)) syncs.push(fsyncDir(dirname(src), options));
  await settleAll(syncs);
}

/**
 * The rename of `renameNoReplace` without its fsyncs, for a caller that
 * shares one fsync of the parents among several moves (enqueueBatch's group
 * commit): nothing that depends on the move may happen before that fsync.
 * Linux rename() silently replaces an EMPTY directory, so dst is lstat-ed
 * first and an existing entry is EXISTS. Residual race: an empty directory
 * created at dst between that lstat and the rename would be replaced. Staged
 * names carry 64 random bits, so only a writer deliberately reusing the same
 * id (who already has our uid, see SEC-5/6) can hit it.
 */
export async function moveNoReplace(src: string, dst: string, options: SafeFsOptions = {}): Promise<void> {
  await moveIn(new DirRef(dirname(src), options), basename(src), new DirRef(dirname(dst), options), basename(dst));
}

/**
 * moveNoReplace of the entry `name` of `from` to the entry `newName` of `to`
 * (directory handles). `made`: the caller made the directory it moves and
 * holds its checked handle (open-dir.ts), so it is not looked at again.
 */
export async function moveIn(from: DirRef, name: string, to: DirRef, newName: string, made = false): Promise<void> {
  const { options } = from;
  const fs = seamOf(options);
  const src = from.entry(name);
  const dst = to.entry(newName);
  const srcAt = from.at(name);
  const dstAt = to.at(newName);
  from.check();
  to.check();
  if (!made) {
    const staged = await lstatOf(options, srcAt, src);
    if (staged === undefined) throw notFound(src);
    refuseUnsafe(src, staged, 'dir');
  }
  const taken = (): FsjobError =>
    new FsjobError('EXISTS', `${dst} already exists; a staged directory never replaces one. Pick a new id.`, {
      path: dst,
    });
  const occupant = await lstatOf(options, dstAt, dst);
  if (occupant?.isSymbolicLink() === true) throw symlinkRefused(dst);
  if (occupant !== undefined) throw taken();
  try {
    await fs.rename(srcAt, dstAt);
  } catch (error) {
    const errno = errnoOf(error);
    if (errno === 'EEXIST' || errno === 'ENOTEMPTY' || errno === 'ENOTDIR') throw taken();
    if (errno === 'ENOENT') throw notFound(src);
    throw filesystemLack(error, 'rename', dst) ?? wrapIo(error, dst, `renaming ${src} to`);
  }
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
  if (basename(path) === '' || resolve(path) === '/') {
    throw new FsjobError('USAGE', `refusing to remove ${JSON.stringify(path)}: not an entry inside a queue`, { path });
  }
  return removeIn(new DirRef(dirname(path), options), basename(path));
}

/**
 * removeTree of the entry `name` of a directory handle's directory. Most
 * removals are one file (a ready entry, a temp name): one unlink(), which
 * never follows a link either; only when the name is a directory is it
 * lstat-ed and removed as a tree.
 */
export function removeIn(ref: DirRef, name: string): Promise<boolean> {
  return promised(() => removeSoon(ref, name));
}

/**
 * removeIn, done before it returns on the real filesystem when the unlink
 * answers (removed, or nothing there): whether it removed the entry; else
 * the promise of the rest (a seam's unlink, a directory at the name).
 */
export function removeSoon(ref: DirRef, name: string): Soon<boolean> {
  const { options } = ref;
  if (options.fs !== undefined) return removeLater(ref, name, true);
  const at = ref.at(name);
  ref.check();
  try {
    // directFs's unlink is this call (seam.ts); without a seam it is made here, without a promise.
    unlinkSync(at);
    return true;
  } catch (error) {
    if (!refusedAsDirectory(error, ref.entry(name))) return false;
  }
  return removeLater(ref, name, false);
}

/** A refused unlink: false for nothing there (ENOENT), true for an entry to look at (Linux says EISDIR for a directory, POSIX EPERM); anything else is thrown. */
function refusedAsDirectory(error: unknown, path: string): boolean {
  const errno = errnoOf(error);
  if (errno === 'ENOENT') return false;
  if (errno !== 'EISDIR' && errno !== 'EPERM') throw wrapIo(error, path, 'removing');
  return true;
}

/** removeIn's steps that wait: the unlink through a seam (`unlink`), and a directory at the name. */
async function removeLater(ref: DirRef, name: string, unlink: boolean): Promise<boolean> {
  const path = ref.entry(name);
  const at = ref.at(name);
  const { options } = ref;
  const fs = seamOf(options);
  if (unlink) {
    ref.check();
    try {
      await fs.unlink(at);
      return true;
    } catch (error) {
      if (!refusedAsDirectory(error, path)) return false;
    }
  }
  const stats = await lstatOf(options, at, path);
  if (stats === undefined) return false;
  if (!stats.isDirectory()) throw wrapIo(Object.assign(new Error(`EPERM: unlink refused for ${describeKind(stats)}`), { code: 'EPERM' }), path, 'removing');
  try {
    await fs.rm(at, { recursive: true, force: true, maxRetries: 0 });
  } catch (error) {
    throw wrapIo(error, path, 'removing');
  }
  return true;
}
