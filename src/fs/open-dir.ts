/**
 * A verified directory handle: one directory of a queue, opened once per
 * visit (O_DIRECTORY|O_NOFOLLOW), checked once on its descriptor, and every
 * call of the visit naming its entries inside that very directory.
 *
 * Node has no openat(2). On Linux, /proc/self/fd/N is a "magic link": a
 * path through it resolves to the directory descriptor N holds, whatever
 * the directory's name leads to by now. So a call on
 * `/proc/self/fd/N/claim.3.json` is openat(N, "claim.3.json"): it cannot be
 * redirected by a swap of the directory or of anything above it. A handle
 * is opened inside its parent's handle the same way, down from the queue
 * root, which is opened by its path (O_NOFOLLOW) and judged by SEC-1.
 *
 * What is checked when:
 * - when a handle is opened: the open refuses a symlink at its name
 *   (O_NOFOLLOW) and anything that is not a directory (O_DIRECTORY, which
 *   never blocks on a FIFO); the descriptor's fstat must show our uid
 *   (SEC-6) and no group or other write bit (SEC-5; the root: SEC-1);
 * - while it is held: nothing more about the directory itself or above it.
 *   Each entry a call names is still opened with O_NOFOLLOW (or lstat-ed,
 *   or linked, which never follows), as SEC-2 asks of final components.
 *
 * Which swap a check can no longer see: a directory replaced after its
 * handle was opened (renamed away, a symlink or another directory put at
 * its name, its mode widened). The visit goes on in the directory it
 * checked, wherever that now is; it never follows the replacement, so
 * nothing is read through or written through it (SEC-2, I6), and the next
 * visit opens the name afresh and refuses what is there (SEC-10: a symlinked
 * job directory is left alone). test/fs/open-dir.test.ts forces that swap.
 *
 * Where /proc/self/fd does not resolve names (not Linux), or where a test
 * injects a filesystem seam (which must see the real paths it matches on),
 * there is no held handle: callers get a Dir named by its path, checked on
 * every call (chain.ts). `heldHandles()` says which.
 *
 * A handle is closed by its visit (close()); one a caller drops without
 * closing is closed once it is garbage (a FinalizationRegistry), never
 * while any code can still reach its descriptor.
 */
import { closeSync, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync } from 'node:fs';
import { errnoOf, FsjobError } from '../base/errors.ts';
import { describeKind, DIR_SYNC_FLAGS, judgeQueueRoot, notFound, notRegular, PRIVATE_DIR_MODE, refuseUnsafe, symlinkRefused, validateComponent, validateEntryName } from './checks.ts';
import { directoryChain, type SafeFsOptions } from './chain.ts';
import { Dir } from './dir.ts';
import { fsyncFd } from './flush.ts';
import { forgetHeldPath, nameHeldPath, wrapIo } from './io-error.ts';
import { lstatOrMissing, readsOf } from './steps.ts';

/** O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC: a directory, never through a link, never blocking. */
const OPEN_DIR_FLAGS = DIR_SYNC_FLAGS;

let procFd: boolean | undefined;

/** Whether names resolve inside a held descriptor here (Linux's /proc/self/fd). Decided once. */
export function heldHandles(): boolean {
  if (procFd !== undefined) return procFd;
  procFd = false;
  try {
    const fd = openSync('/', OPEN_DIR_FLAGS);
    try {
      const through = lstatSync(`/proc/self/fd/${fd}/.`, { throwIfNoEntry: false });
      const held = fstatSync(fd);
      procFd = through !== undefined && through.ino === held.ino && through.dev === held.dev;
    } finally {
      closeSync(fd);
    }
  } catch {
    // no /proc: named directories
  }
  return procFd;
}

/** Whether `options` allow a held handle: the real filesystem (no seam) on a system that has them. */
export function heldFor(options: SafeFsOptions): boolean {
  return options.fs === undefined && heldHandles();
}

const closer = new FinalizationRegistry<number>((fd) => {
  forgetHeldPath(fd);
  try {
    closeSync(fd);
  } catch {
    // already closed: nothing to do
  }
});

/** An open failure of a directory: a link or something else at the name is refused, as SEC-2 and SEC-3 say. */
function openDirFailure(error: unknown, at: string, shown: string): FsjobError {
  const errno = errnoOf(error);
  if (errno === 'ENOENT') return notFound(shown);
  // Linux answers O_DIRECTORY|O_NOFOLLOW on a symlink with ENOTDIR, not ELOOP: look to say which.
  if (errno === 'ELOOP' || errno === 'ENOTDIR') {
    const stats = lstatOrMissing(readsOf(undefined), at, shown);
    if (stats === undefined) return notFound(shown);
    if (stats.isSymbolicLink()) return symlinkRefused(shown);
    return notRegular(shown, describeKind(stats), 'dir');
  }
  return wrapIo(error, shown, 'opening directory');
}

export class OpenDir extends Dir {
  readonly #fd: number;
  readonly #base: string;
  #closed = false;

  private constructor(path: string, options: SafeFsOptions, chain: readonly string[], fd: number) {
    super(path, options, chain);
    this.#fd = fd;
    this.#base = `/proc/self/fd/${fd}`;
    nameHeldPath(fd, path);
    closer.register(this, fd, this);
  }

  /**
   * The queue root at `root`, opened by its path and judged by SEC-1 on its
   * descriptor. Only where heldFor(options) is true.
   */
  static root(root: string, options: SafeFsOptions): OpenDir {
    let fd: number;
    try {
      fd = openSync(root, OPEN_DIR_FLAGS);
    } catch (error) {
      const errno = errnoOf(error);
      if (errno !== 'ENOENT' && errno !== 'ELOOP' && errno !== 'ENOTDIR') throw wrapIo(error, root, 'opening directory');
      judgeQueueRoot(root, lstatSync(root, { throwIfNoEntry: false }));
      throw wrapIo(error, root, 'opening directory');
    }
    return OpenDir.adopt(root, options, directoryChain(root, options.root), fd, (stats) => judgeQueueRoot(root, stats));
  }

  /** Checks a descriptor just opened and wraps it; closes it when a check refuses it. */
  private static adopt(path: string, options: SafeFsOptions, chain: readonly string[], fd: number, judge: (stats: import('node:fs').Stats) => void): OpenDir {
    try {
      judge(fstatSync(fd));
    } catch (error) {
      closeSync(fd);
      throw error instanceof FsjobError ? error : wrapIo(error, path, 'fstat of');
    }
    return new OpenDir(path, options, chain, fd);
  }

  override get fd(): number {
    return this.#fd;
  }

  /**
   * A call names an entry inside the held descriptor (see the header). A
   * closed handle names nothing: its descriptor number may already be
   * another file's.
   */
  override at(name: string): string {
    validateComponent(name);
    return `${this.base}/${name}`;
  }

  override get base(): string {
    if (this.#closed) throw new FsjobError('USAGE', `the handle of ${this.path} was closed; open the directory again`, { path: this.path });
    return this.#base;
  }

  /** Checked when it was opened; a held directory cannot be swapped under its calls. */
  override check(): void {
    void this.base;
  }

  override fsync(): Promise<void> {
    void this.base;
    return fsyncFd(this.#fd, this);
  }

  /** The subdirectory `name`, opened inside this one and checked on its descriptor (SEC-2, SEC-5, SEC-6). */
  openChild(name: string): OpenDir {
    const at = this.at(name);
    const shown = this.entry(name);
    let fd: number;
    try {
      fd = openSync(at, OPEN_DIR_FLAGS);
    } catch (error) {
      throw openDirFailure(error, at, shown);
    }
    return OpenDir.adopt(shown, this.options, this.childChain(shown), fd, (stats) => refuseUnsafe(shown, stats, 'dir'));
  }

  /**
   * PUB-8: the new subdirectory `name` (mkdir 0700, then fchmod 0700 on its
   * own descriptor, which no link planted meanwhile can redirect), opened.
   * EXISTS when the name is taken: nothing there is used or removed.
   */
  makeChild(name: string): OpenDir {
    validateEntryName(name, false);
    const at = this.at(name);
    const shown = this.entry(name);
    try {
      mkdirSync(at, { mode: PRIVATE_DIR_MODE });
    } catch (error) {
      if (errnoOf(error) === 'EEXIST') throw new FsjobError('EXISTS', `${shown} already exists; a new directory is never made over another entry (PUB-8)`, { path: shown, clause: 'PUB-8' });
      throw wrapIo(error, shown, 'mkdir of', 'PUB-8');
    }
    const child = this.openChild(name);
    try {
      fchmodSync(child.fd, PRIVATE_DIR_MODE);
    } catch (error) {
      child.close();
      throw wrapIo(error, shown, 'chmod of', 'PUB-8');
    }
    return child;
  }

  /** Ends the visit: the descriptor is closed. Idempotent. */
  override close(): void {
    if (this.#closed) return;
    this.#closed = true;
    closer.unregister(this);
    forgetHeldPath(this.#fd);
    closeSync(this.#fd);
  }
}
