/**
 * Reading a queue: bounded reads of records and data files, listings and
 * lstats that never follow a link (SEC-2..SEC-4). Each is one implementation
 * in src/fs/steps.ts, run in a checked directory (a DirRef: the `*In` forms,
 * which src/fs/dir.ts's handle calls) or named by a path (the forms below
 * them, which make the DirRef from the path). The *Sync forms run the same
 * code on the real filesystem for a whole-queue audit (fsjob validate), which
 * walks and checks each directory itself once and so skips the checks.
 */
import { basename, dirname } from 'node:path';
import type { Stats } from 'node:fs';
import { kindOfStats, type DirEntry, type EntryKind } from './checks.ts';
import { DirRef, type SafeFsOptions } from './chain.ts';
import { directHandle, realReads, type SafeHandle } from './seam.ts';
import { listEntries, lstatIfExists, lstatOrMissing, openChecked, readFile, readsOf, type FileRead, type ReadFileOptions } from './steps.ts';

export interface EntryStat {
  kind: EntryKind;
  size: number;
  mtimeMs: number;
}

/**
 * Read a whole file of at most `maxBytes` bytes in `dir` (SEC-2..SEC-6).
 * Order: the directory's checks, lstat (kind, size, owner, mode), open
 * non-blocking without following, fstat (same dev/ino, same checks), read at
 * most maxBytes+1 bytes.
 */
export async function readIn(dir: DirRef, name: string, maxBytes: number, allowMissing: boolean): Promise<Buffer | undefined> {
  return readNow(dir, name, maxBytes, allowMissing);
}

/** readIn, synchronously: every call of it is one already (a consumer reads a spec per job without a promise). */
export function readNow(dir: DirRef, name: string, maxBytes: number, allowMissing: boolean): Buffer | undefined {
  const at = dir.at(name);
  dir.check();
  // In a held directory the file is opened without an lstat first: the open
  // never follows (O_NOFOLLOW) and never blocks (O_NONBLOCK), and its fstat
  // is judged before a byte is read (SEC-3: a reader that chooses its open
  // flags needs no look before them).
  return readFile(readsOf(dir.options.fs), at, maxBytes, { allowMissing, listed: dir.fd !== undefined, shown: dir.entry(name) })?.bytes;
}

/** A data file opened for the caller to keep, with readIn's checks (EXEC-7: a job's stdin is handed on as a descriptor). */
export async function openIn(dir: DirRef, name: string, maxBytes: number): Promise<{ handle: SafeHandle; size: number }> {
  const at = dir.at(name);
  dir.check();
  const opened = openChecked(readsOf(dir.options.fs), at, maxBytes, dir.entry(name));
  return { handle: directHandle(opened.handle), size: opened.size };
}

/** lstat of one entry (never followed) after the directory's checks; undefined when nothing is there. */
export async function statIn(dir: DirRef, name: string): Promise<EntryStat | undefined> {
  return statNow(dir, name);
}

/** statIn as the synchronous call it is (every read call is: seam.ts), for a caller that would only await it. */
export function statNow(dir: DirRef, name: string): EntryStat | undefined {
  const at = dir.at(name);
  dir.check();
  const stats = lstatOrMissing(readsOf(dir.options.fs), at, dir.entry(name));
  return stats === undefined ? undefined : { kind: kindOfStats(stats), size: stats.size, mtimeMs: stats.mtimeMs };
}

/** Whether anything is at `name`: one lstat WITHOUT the directory's checks (see entryPresent). */
export async function presentIn(dir: DirRef, name: string): Promise<boolean> {
  return presentNow(dir, name);
}

/** presentIn, synchronously (see statNow). */
export function presentNow(dir: DirRef, name: string): boolean {
  return lstatIfExists(readsOf(dir.options.fs), dir.at(name), dir.entry(name)) !== undefined;
}

/** The directory's entries, following nothing, after its checks; sorted by name. */
export async function listIn(dir: DirRef): Promise<DirEntry[]> {
  return listNow(dir);
}

/** listIn, synchronously (one getdents loop: a consumer lists a job directory per claim without a promise). */
export function listNow(dir: DirRef): DirEntry[] {
  dir.check();
  return listEntries(readsOf(dir.options.fs), dir.base, dir.path);
}

// The same, named by a path.

export interface ReadBoundedOptions extends SafeFsOptions {
  /** Return undefined instead of throwing NOT_FOUND when the file is absent. */
  allowMissing?: boolean;
}

/** readIn for the file at `path` (its parent is the directory checked). */
export async function readBounded(path: string, maxBytes: number, options: ReadBoundedOptions & { allowMissing: true }): Promise<Buffer | undefined>;
export async function readBounded(path: string, maxBytes: number, options?: ReadBoundedOptions): Promise<Buffer>;
export async function readBounded(path: string, maxBytes: number, options: ReadBoundedOptions = {}): Promise<Buffer | undefined> {
  return readIn(new DirRef(dirname(path), options), basename(path), maxBytes, options.allowMissing === true);
}

/** openIn for the file at `path`. */
export async function openBounded(path: string, maxBytes: number, options: SafeFsOptions = {}): Promise<{ handle: SafeHandle; size: number }> {
  return openIn(new DirRef(dirname(path), options), basename(path), maxBytes);
}

/**
 * lstat of one entry inside a queue (never followed), after the parent
 * check; undefined when it does not exist. Only metadata: used to tell the
 * age of temporary files and ready entries (TEMP-1, READY-3) and whether a
 * record name is taken (CLAIM-7).
 */
export async function statEntry(path: string, options: SafeFsOptions = {}): Promise<EntryStat | undefined> {
  return statIn(new DirRef(dirname(path), options), basename(path));
}

/**
 * Whether an entry of any kind exists at `path` (one lstat, never followed),
 * WITHOUT the parent check statEntry makes: for hints over many entries of a
 * directory that was just listed and checked, where the answer only decides
 * whether to look closer (a finished job's receipt.json at start-up, READY-4).
 * Anything in the way that is not a directory reads as absent.
 */
export async function entryPresent(path: string, options: SafeFsOptions = {}): Promise<boolean> {
  return entryPresentNow(path, options);
}

/** entryPresent, synchronously: a lstat needs no promise (see statNow). */
export function entryPresentNow(path: string, options: SafeFsOptions = {}): boolean {
  return lstatIfExists(readsOf(options.fs), path) !== undefined;
}

/** listIn for the directory at `dir`. */
export async function listDir(dir: string, options: SafeFsOptions = {}): Promise<DirEntry[]> {
  return listIn(new DirRef(dir, options));
}

// The synchronous forms, for a whole-queue audit: the caller has checked the
// directory; nothing is written, only names a listing reported as regular
// files are opened.

/** The listing of listIn without the directory's checks. Throws NOT_FOUND or IO. */
export function listDirSync(dir: string): DirEntry[] {
  return listEntries(realReads, dir);
}

/** lstat, or undefined when nothing (or nothing that is a directory on the way) is there. Throws IO otherwise. */
export function lstatIfExistsSync(path: string): Stats | undefined {
  return lstatIfExists(realReads, path);
}

export type BoundedReadSync = FileRead;

export type ReadBoundedSyncOptions = Pick<ReadFileOptions, 'hash' | 'scratch' | 'uid'>;

/**
 * SEC-2..SEC-6 for one regular file a listing reported, synchronously: open
 * with O_RDONLY|O_NOFOLLOW|O_NONBLOCK (and O_NOATIME when permitted), fstat,
 * then at most maxBytes+1 bytes. Throws readBounded's refusals, NOT_FOUND or
 * IO. The parent directory is NOT checked: the caller walked and checked it.
 */
export function readBoundedSync(path: string, maxBytes: number, options: ReadBoundedSyncOptions = {}): BoundedReadSync {
  // Without allowMissing readFile answers or throws.
  return readFile(realReads, path, maxBytes, { hash: options.hash, scratch: options.scratch, uid: options.uid, listed: true, noatime: true }) as FileRead;
}
