/**
 * The filesystem calls safefs makes, as a seam (tests inject faults through
 * it) and its default implementation.
 *
 * Why the default is not node:fs/promises: every promise call is a round trip
 * through libuv's thread pool (a futex wake, the call on a pool thread, an
 * eventfd write, an epoll wake-up on the main thread). A durable job makes
 * ~130 such calls; measured on a 2-core machine the hand-offs cost more CPU
 * than the calls themselves (bench/results: ~250 futex and ~160 epoll_pwait
 * per job, 12-17 ms CPU per payload job against ~1 ms for the floor's same
 * calls in C). Metadata calls, small writes and opens of queue entries take
 * microseconds in the kernel, so directFs makes them synchronously. Only
 * fsync, which waits for the disk, may go to the pool, where several jobs of
 * one process overlap their fsyncs (which this disk rewards); flush.ts says
 * when it does.
 *
 * The methods stay async so a seam and the default are used the same way,
 * and a thrown errno reaches callers as a rejection, as before. The calls
 * that only look (lstat, an open for reading, fstat, read, close, readdir)
 * are synchronous in the seam too (`reads`): src/fs/steps.ts has one
 * implementation of every read, which the validator also runs for a whole
 * queue, where a promise per call would cost more than the call.
 */
import type { Dirent, Stats } from 'node:fs';
import { closeSync, fchmodSync, fstatSync, linkSync, lstatSync, mkdirSync, openSync, readSync, readdirSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { fsyncFd } from './flush.ts';

/** The part of a FileHandle that safefs and its callers use; a node FileHandle is one. */
export interface SafeHandle {
  readonly fd: number;
  chmod(mode: number): Promise<void>;
  write(buffer: Uint8Array, offset?: number, length?: number, position?: number | null): Promise<{ bytesWritten: number }>;
  read(buffer: Uint8Array, offset: number, length: number, position: number | null): Promise<{ bytesRead: number }>;
  stat(): Promise<Stats>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** The synchronous calls every read makes (the node:fs functions of the same names). */
export interface ReadCalls {
  /** lstat; undefined (or a thrown ENOENT) when nothing is there: the real one throws nothing for a missing name, which costs an exception per look. */
  lstat(path: string): Stats | undefined;
  open(path: string, flags: number): number;
  fstat(fd: number): Stats;
  read(fd: number, buffer: Buffer, offset: number, length: number, position: number): number;
  close(fd: number): void;
  readdir(path: string, options: { withFileTypes: true }): Dirent[];
  readdir(path: string): string[];
}

function readdirCall(path: string, options: { withFileTypes: true }): Dirent[];
function readdirCall(path: string): string[];
function readdirCall(path: string, options?: { withFileTypes: true }): Dirent[] | string[] {
  return options === undefined ? readdirSync(path) : readdirSync(path, options);
}

/** The real ones. A test seam spreads them and replaces one. */
export const realReads: ReadCalls = {
  lstat: (path) => lstatSync(path, { throwIfNoEntry: false }),
  open: (path, flags) => openSync(path, flags),
  fstat: (fd) => fstatSync(fd),
  read: (fd, buffer, offset, length, position) => readSync(fd, buffer, offset, length, position),
  close: (fd) => closeSync(fd),
  readdir: readdirCall,
};

/** The filesystem calls safefs makes that change something; node:fs/promises satisfies it, so a test seam can spread it. */
export interface SafeFsSeam {
  /** The calls of every read; @default realReads */
  reads?: ReadCalls;
  open(path: string, flags: number, mode?: number): Promise<SafeHandle>;
  link(existing: string, target: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  mkdir(path: string, options: { mode: number }): Promise<unknown>;
  rm(path: string, options: { recursive: true; force: true; maxRetries: number }): Promise<void>;
}

function badDescriptor(): Error {
  return Object.assign(new Error('EBADF: the handle is closed'), { code: 'EBADF', errno: -9 });
}

/** A descriptor used through synchronous calls, except sync(), which goes to the pool. */
class DirectHandle implements SafeHandle {
  #fd: number;

  constructor(fd: number) {
    this.#fd = fd;
  }

  get fd(): number {
    return this.#fd;
  }

  #open(): number {
    if (this.#fd < 0) throw badDescriptor();
    return this.#fd;
  }

  async chmod(mode: number): Promise<void> {
    fchmodSync(this.#open(), mode);
  }

  async write(buffer: Uint8Array, offset = 0, length = buffer.byteLength - offset, position: number | null = null): Promise<{ bytesWritten: number }> {
    return { bytesWritten: writeSync(this.#open(), buffer, offset, length, position) };
  }

  async read(buffer: Uint8Array, offset: number, length: number, position: number | null): Promise<{ bytesRead: number }> {
    return { bytesRead: readSync(this.#open(), buffer, offset, length, position) };
  }

  async stat(): Promise<Stats> {
    return fstatSync(this.#open());
  }

  /** On the main thread or the pool, as flush.ts decides. */
  sync(): Promise<void> {
    const fd = this.#fd;
    if (fd < 0) return Promise.reject(badDescriptor());
    return fsyncFd(fd);
  }

  /** Idempotent: a second close must never close a descriptor number the process has since reused. */
  async close(): Promise<void> {
    const fd = this.#fd;
    if (fd < 0) return;
    this.#fd = -1;
    closeSync(fd);
  }
}

/** A descriptor opened by a synchronous call, as a handle its taker closes. */
export function directHandle(fd: number): SafeHandle {
  return new DirectHandle(fd);
}

/** The open descriptor of a handle of the real filesystem (directHandle), which synchronous calls may use; undefined for a seam's handle or a closed one. */
export function directFdOf(handle: SafeHandle): number | undefined {
  return handle instanceof DirectHandle && handle.fd >= 0 ? handle.fd : undefined;
}

export const directFs: SafeFsSeam = {
  open: async (path, flags, mode) => new DirectHandle(openSync(path, flags, mode)),
  link: async (existing, target) => linkSync(existing, target),
  rename: async (from, to) => renameSync(from, to),
  unlink: async (path) => unlinkSync(path),
  mkdir: async (path, options) => mkdirSync(path, options),
  // Removal of whole trees is rare (gc, recovery) and may be large: keep it off the event loop.
  rm: (path, options) => rm(path, options),
};
