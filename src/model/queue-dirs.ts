/**
 * The queue's directories as the hot paths use them (enqueue, claim,
 * receipt): held handles (src/fs/open-dir.ts) where the system has them, so
 * a visit's calls name entries inside directories checked when opened
 * instead of lstat-ing the chain above every call.
 *
 * What is checked when: the root (SEC-1) and each of its six directories
 * (SEC-2, SEC-5, SEC-6) when its handle is opened, lazily, at its first use;
 * the handles of a queue object are opened afresh once ANCESTOR_TRUST_MS
 * old, so a queue damaged or replaced meanwhile is judged again within that
 * time (LAYOUT-10) and never followed before. A job directory
 * (`openJobDir`) is opened and checked once per visit, inside the held
 * jobs/, and its visit closes it.
 *
 * Without held handles (no /proc/self/fd, or a test's filesystem seam),
 * the same calls return the queue's named directories (Queue.dirs), checked
 * on every call as before.
 */
import { ANCESTOR_TRUST_MS, Dir, OpenDir, heldFor } from '../fs/safefs.ts';
import { assertJobId, type QueueDir } from './layout.ts';
import { jobDir, type Queue } from './queue.ts';

interface Held {
  openedMs: number;
  root: OpenDir;
  dirs: Map<QueueDir, OpenDir>;
}

// Per queue object: the handles go when the queue object does (their
// descriptors are closed once they are garbage, open-dir.ts).
const held = new WeakMap<Queue, Held>();

function current(queue: Queue): Held | undefined {
  if (!heldFor(queue.fsOptions)) return undefined;
  // process.hrtime, not performance.now(): the global performance loads node:perf_hooks (~1 ms of every start).
  const now = Number(process.hrtime.bigint()) / 1e6;
  let handles = held.get(queue);
  if (handles === undefined || now - handles.openedMs >= ANCESTOR_TRUST_MS) {
    handles = { openedMs: now, root: OpenDir.root(queue.root, queue.fsOptions), dirs: new Map() };
    held.set(queue, handles);
  }
  return handles;
}

/** The queue root for one visit's calls: held, or named (Queue.dirs' parent). */
export function rootDir(queue: Queue): Dir {
  return current(queue)?.root ?? new Dir(queue.root, queue.fsOptions);
}

/** A directory of LAYOUT-1 for one visit's calls: held (checked when opened) or named (checked per call). */
export function queueDir(queue: Queue, name: QueueDir): Dir {
  const handles = current(queue);
  if (handles === undefined) return queue.dirs[name];
  let dir = handles.dirs.get(name);
  if (dir === undefined) {
    dir = handles.root.openChild(name);
    handles.dirs.set(name, dir);
  }
  return dir;
}

/**
 * jobs/<id> for one visit (LAYOUT-4: the id is checked first): opened inside
 * the held jobs/ and checked once (NOT_FOUND, SYMLINK_REFUSED, NOT_REGULAR,
 * UNSAFE_MODE, FOREIGN_OWNER), or named. The visit closes it (Dir.close()).
 */
export function openJobDir(queue: Queue, id: string): Dir {
  const jobs = queueDir(queue, 'jobs');
  return jobs instanceof OpenDir ? jobs.openChild(assertJobId(id)) : jobDir(queue, id);
}
