/**
 * The directories above what a call acts on (SEC-1, SEC-2, SEC-5, SEC-6),
 * for a directory named by its path (a Dir). The hot paths hold their
 * directories open instead where the system allows it (open-dir.ts: checked
 * once per visit, names resolved inside the opened directory).
 *
 * Node has no openat(2): every call names its target by a path from the root,
 * so a directory checked once could be swapped for a symlink before the next
 * call. What is checked when:
 * - the queue root, SEC-1, when the queue is opened and whenever a chain from
 *   it is checked;
 * - the directory a call acts in (the parent of the file it reads, publishes,
 *   creates or removes), on every call, by lstat;
 * - the directories between the root and that one, again once the last
 *   passing check is ANCESTOR_TRUST_MS old. The verdicts are kept per queue
 *   (an AncestorTrust in its fsOptions), never per process, and only for the
 *   real filesystem: a seam (fault injection) sees every call.
 * The final component is opened with O_NOFOLLOW or lstat-ed.
 *
 * Residual race, stated once: the lstat checks are not atomic with the call
 * that follows. Exploiting the gap needs write access to a directory that
 * SEC-5/SEC-6 just proved is private to our own uid, so the attacker would
 * already be us.
 */
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { judgeQueueRoot, notFound, refuseUnsafe, validateComponent } from './checks.ts';
import type { SafeFsSeam } from './seam.ts';
import { lstatOrMissing, readsOf } from './steps.ts';

/**
 * How long an ancestor directory's verdict is trusted before it is lstat-ed
 * again. A job touches the same root and jobs/ some twenty times in a few ms;
 * replacing a directory of a private queue takes our own uid (above).
 */
export const ANCESTOR_TRUST_MS = 1000;

/** Passing verdicts on ancestor directories, for one queue. */
export class AncestorTrust {
  private readonly at = new Map<string, number>();

  trusted(dir: string, nowMs: number): boolean {
    const at = this.at.get(dir);
    return at !== undefined && nowMs - at < ANCESTOR_TRUST_MS;
  }

  trust(dir: string, nowMs: number): void {
    // Bounded: a queue has a handful of directories above any entry, but ids are many.
    if (this.at.size >= 256) this.at.clear();
    this.at.set(dir, nowMs);
  }
}

export interface SafeFsOptions {
  /** Defaults to directFs (synchronous calls, fsync through the thread pool); tests inject faults here. */
  fs?: SafeFsSeam;
  /** The queue root; when given, every directory from it down to the target's parent is checked. */
  root?: string;
  /** The queue's remembered verdicts on ancestors (see above); without it every ancestor is checked each time. */
  trust?: AncestorTrust;
}

/** Directories from `root` down to `dir` (both included); just `dir` without a root. */
export function directoryChain(dir: string, root: string | undefined): string[] {
  if (root === undefined) return [dir];
  const absRoot = resolve(root);
  const absDir = resolve(dir);
  const rel = relative(absRoot, absDir);
  if (rel === '') return [absRoot];
  if (rel.startsWith('..') || isAbsolute(rel)) {
    throw new FsjobError('USAGE', `${dir} is not inside the queue root ${root}; pass a path under the root`, { path: dir });
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
  judgeQueueRoot(root, lstatOrMissing(readsOf(options.fs), root));
}

function checkChain(chain: readonly string[], options: SafeFsOptions): void {
  const calls = readsOf(options.fs);
  const trust = options.fs === undefined ? options.trust : undefined;
  // process.hrtime, not performance.now(): the global performance loads node:perf_hooks (~1 ms of every start).
  const nowMs = trust === undefined ? Number.NaN : Number(process.hrtime.bigint()) / 1e6;
  const last = chain.length - 1;
  for (const [index, dir] of chain.entries()) {
    if (index < last && trust?.trusted(dir, nowMs) === true) continue;
    const stats = lstatOrMissing(calls, dir);
    if (index === 0 && options.root !== undefined) {
      judgeQueueRoot(dir, stats);
    } else {
      if (stats === undefined) throw notFound(dir);
      refuseUnsafe(dir, stats, 'dir');
    }
    trust?.trust(dir, nowMs);
  }
}

/**
 * SEC-2/3/5/6 for a directory inside a queue (and, with `root`, for every
 * directory above it up to the root, which gets the SEC-1 check). Every
 * primitive that names a file runs this on the file's directory.
 */
export async function checkDirInside(path: string, options: SafeFsOptions = {}): Promise<void> {
  new DirRef(path, options).check();
}

/** Whether a directory is at `path`, after the checks of checkDirInside: NOT_FOUND is false, a refusal throws. */
export async function dirPresent(path: string, options: SafeFsOptions = {}): Promise<boolean> {
  try {
    await checkDirInside(path, options);
    return true;
  } catch (error) {
    if (isFsjobError(error, 'NOT_FOUND')) return false;
    throw error;
  }
}

/**
 * A directory named once: its path, the directories from the queue root down
 * to it (computed once, not from the path at every call), and the options
 * every call in it uses. src/fs/dir.ts gives it its calls.
 */
export class DirRef {
  /** Absolute path of the directory. */
  readonly path: string;
  readonly options: SafeFsOptions;
  /** The directories checked before a call in this one, root first, this one last. */
  readonly chain: readonly string[];

  constructor(path: string, options: SafeFsOptions, chain: readonly string[] = directoryChain(path, options.root)) {
    this.path = path;
    this.options = options;
    this.chain = chain;
  }

  /**
   * SEC-1..SEC-6 on the chain: this directory always, those above it by the
   * queue's trust. Synchronous, as every read call is (seam.ts's ReadCalls):
   * an await per check cost a promise and a microtask on every call in a directory.
   */
  check(): void {
    checkChain(this.chain, this.options);
  }

  /**
   * A descriptor of the directory when it is held open (an OpenDir, open-dir.ts:
   * its fsync needs no open); undefined for a directory named by its path.
   */
  get fd(): number | undefined {
    return undefined;
  }

  /** The path of one entry, as messages name it: `name` must be one component. */
  entry(name: string): string {
    validateComponent(name);
    // One checked component below an absolute directory: nothing for join() to normalise.
    return this.path.endsWith('/') ? `${this.path}${name}` : `${this.path}/${name}`;
  }

  /**
   * The path a system call uses for the entry `name`: entry(name) here; a
   * held directory names it inside the directory it opened (open-dir.ts).
   */
  at(name: string): string {
    return this.entry(name);
  }

  /** The path a system call uses for the directory itself (a listing): `path` here. */
  get base(): string {
    return this.path;
  }

  /** The chain of the subdirectory at `path` (an entry of this one). */
  protected childChain(path: string): readonly string[] {
    return this.options.root === undefined ? [path] : [...this.chain, path];
  }
}
