/**
 * A directory handle: one directory of a queue, named once, and calls that
 * take names relative to it. Nothing below a handle builds a path from text
 * it was not given as one component: a name is validated (one component, no
 * "/", not "." or "..") or refused.
 *
 * What is checked when (Node has no openat, see chain.ts): making a handle
 * costs no system call; the directories from the queue root down to it are
 * worked out once, when it is made. Each call then lstat-checks the directory
 * itself (it could have been swapped for a link since the last call) and
 * those above it once per ANCESTOR_TRUST_MS of the queue's trust. The entry a
 * call names is opened with O_NOFOLLOW or lstat-ed, never followed.
 */
import type { DirEntry } from './checks.ts';
import { DirRef, type SafeFsOptions } from './chain.ts';
import { listIn, listNow, openIn, presentIn, presentNow, readIn, readNow, statIn, statNow, type EntryStat } from './read.ts';
import type { SafeHandle } from './seam.ts';
import { createIn, fsyncDir, publishIn, removeIn, type Placement, type PublishOptions } from './write.ts';

export class Dir extends DirRef {
  constructor(path: string, options: SafeFsOptions, chain?: readonly string[]) {
    super(path, options, chain);
  }

  /** The handle of the subdirectory `name` (no system call: it is checked when used). */
  child(name: string): Dir {
    const path = this.entry(name);
    return new Dir(path, this.options, this.childChain(path));
  }

  list(): Promise<DirEntry[]> {
    return listIn(this);
  }

  /** list(), synchronously (read.ts, listNow). */
  listNow(): DirEntry[] {
    return listNow(this);
  }

  read(name: string, maxBytes: number, options: { allowMissing: true }): Promise<Buffer | undefined>;
  read(name: string, maxBytes: number): Promise<Buffer>;
  read(name: string, maxBytes: number, options: { allowMissing?: boolean }): Promise<Buffer | undefined>;
  // Not async: an async method returning readIn's promise would resolve with a thenable, two more turns per read.
  read(name: string, maxBytes: number, options: { allowMissing?: boolean } = {}): Promise<Buffer | undefined> {
    return readIn(this, name, maxBytes, options.allowMissing === true);
  }

  /** read(), synchronously (read.ts, readNow). */
  readNow(name: string, maxBytes: number, options: { allowMissing?: boolean } = {}): Buffer | undefined {
    return readNow(this, name, maxBytes, options.allowMissing === true);
  }

  /** A data file opened for the caller to keep (EXEC-7). */
  open(name: string, maxBytes: number): Promise<{ handle: SafeHandle; size: number }> {
    return openIn(this, name, maxBytes);
  }

  stat(name: string): Promise<EntryStat | undefined> {
    return statIn(this, name);
  }

  /** stat(), synchronously: a lstat needs no promise (read.ts, statNow). */
  statNow(name: string): EntryStat | undefined {
    return statNow(this, name);
  }

  /** Whether anything is at `name` (one lstat, without the directory's checks: a hint, see entryPresent). */
  present(name: string): Promise<boolean> {
    return presentIn(this, name);
  }

  /** present(), synchronously. */
  presentNow(name: string): boolean {
    return presentNow(this, name);
  }

  /** PUB-1..PUB-6: the one way a record is published. */
  publish(name: string, data: string | Buffer, placement: Placement, options?: PublishOptions): Promise<string> {
    return publishIn(this, name, data, placement, options);
  }

  /** PUB-7: a data file created exclusively; the caller writes, fsyncs and closes it. */
  create(name: string, mode?: number): Promise<SafeHandle> {
    return createIn(this, name, mode);
  }

  remove(name: string): Promise<boolean> {
    return removeIn(this, name);
  }

  /** PUB-5 */
  fsync(): Promise<void> {
    return fsyncDir(this.path, this.options);
  }

  /** Ends a visit: nothing to release for a directory named by its path (a held one closes its descriptor, open-dir.ts). */
  close(): void {}
}
