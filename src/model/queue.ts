/**
 * Opening and creating a queue (spec/producer.md, LAYOUT-1, LAYOUT-2).
 *
 * A directory is a queue only when its root passes SEC-1 and `fsjob.json` is a
 * valid queue record of major 1. `initQueue` creates the directories first and
 * publishes `fsjob.json` last (INIT-2), so a crash mid-init leaves a
 * directory that is not yet a queue and a rerun of init finishes it.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import os from 'node:os';
import { lstat, mkdir, stat } from 'node:fs/promises';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { QUEUE_DIRS, QUEUE_RECORD, QueuePaths, assertJobId, gatedName, type QueueDir } from './layout.ts';
import { AncestorTrust, Dir, checkDirInside, checkQueueRoot, ensurePrivateDir, entryPresent, probeFilesystem, publishRecord, type SafeFsOptions } from '../fs/safefs.ts';
import { encodeRecord, readRecord, type QueueRecord } from '../records/codec.ts';
import { PROTOCOL_VERSION } from '../base/constants.ts';
import type { Clock } from '../base/clock.ts';
import { systemClock } from '../base/clock.ts';

/** An opened queue (`openQueue`, `initQueue`): its root checked (SEC-1), its queue record read. */
export interface Queue {
  /** Absolute path of the queue root. */
  readonly root: string;
  /** The absolute paths of its directories (spec/layout.md). */
  readonly paths: QueuePaths;
  /** Its fsjob.json. */
  readonly record: QueueRecord;
  /** Options every safefs call inside this queue passes: every parent is checked from the root. */
  readonly fsOptions: SafeFsOptions & { root: string };
  /** A handle of each directory of LAYOUT-1 (src/fs/dir.ts: names relative to it, checked per call). */
  readonly dirs: { readonly [K in QueueDir]: Dir };
}

/** The handle of jobs/<id>/ (LAYOUT-4: the id is checked first). */
export function jobDir(queue: Queue, id: string): Dir {
  return queue.dirs.jobs.child(assertJobId(id));
}

/** The handle of jobs/<id>.gated/, a gated job's directory (GATE-1). */
export function gatedJobDir(queue: Queue, id: string): Dir {
  return queue.dirs.jobs.child(gatedName(id));
}

/** Where a job's directory is (GATE-4): open at jobs/<id>, gated at jobs/<id>.gated, or nowhere. */
export type JobPlace = 'open' | 'gated' | 'missing';

/** GATE-4: jobs/<id>, then jobs/<id>.gated, then jobs/<id> again, for a gate only opens (any entry counts, REC-9). */
export async function locateJob(queue: Queue, id: string): Promise<JobPlace> {
  if (await queue.dirs.jobs.present(assertJobId(id))) return 'open';
  if (await queue.dirs.jobs.present(gatedName(id))) return 'gated';
  return (await queue.dirs.jobs.present(id)) ? 'open' : 'missing';
}

/** Options of `openQueue` and `initQueue`: seams for tests (the filesystem and the clock). */
export interface QueueOptions {
  fs?: SafeFsOptions['fs'];
  clock?: Clock;
}

/**
 * The queue an operator means when they name none: $FSJOB_QUEUE, else a
 * per-user queue under the XDG state directory.
 */
export function defaultQueuePath(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env['FSJOB_QUEUE'];
  if (fromEnv !== undefined && fromEnv !== '') return path.resolve(fromEnv);
  const stateHome = env['XDG_STATE_HOME'];
  const base = stateHome !== undefined && path.isAbsolute(stateHome) ? stateHome : path.join(os.homedir(), '.local', 'state');
  return path.join(base, 'fsjob', 'default');
}

/** Opens an existing queue, refusing anything SEC-1 or LAYOUT-2 rejects. */
export async function openQueue(root: string, options: QueueOptions = {}): Promise<Queue> {
  const absolute = path.resolve(root);
  // The queue's own verdicts on its directories (SEC-2: what is checked when, src/fs/chain.ts).
  const fsOptions = { root: absolute, trust: new AncestorTrust(), ...(options.fs === undefined ? {} : { fs: options.fs }) };
  try {
    await checkQueueRoot(absolute, fsOptions);
  } catch (error) {
    if (isFsjobError(error, 'NOT_A_QUEUE')) {
      throw new FsjobError('NOT_A_QUEUE', `${absolute} does not exist; create a queue there with: fsjob init --queue ${absolute}`, {
        path: absolute,
        clause: 'LAYOUT-2',
        cause: error,
      });
    }
    throw error;
  }
  const paths = new QueuePaths(absolute);
  const inspection = await readRecord(paths.queueRecord(), 'queue', { ...fsOptions, allowMissing: true });
  if (inspection === undefined) {
    throw new FsjobError('NOT_A_QUEUE', `${absolute} is not an fsjob queue (no fsjob.json); create one with: fsjob init --queue ${absolute}`, {
      path: absolute,
      clause: 'LAYOUT-2',
    });
  }
  if (!inspection.ok) {
    const first = inspection.findings[0];
    const code = first?.code === 'RECORD_VERSION' ? 'UNSUPPORTED_VERSION' : 'NOT_A_QUEUE';
    throw new FsjobError(code, `${paths.queueRecord()} is not a valid queue record: ${first?.message ?? 'invalid'}`, {
      path: paths.queueRecord(),
      clause: first?.clause ?? 'LAYOUT-2',
    });
  }
  for (const dir of QUEUE_DIRS) {
    try {
      await checkDirInside(paths.dir(dir), fsOptions);
    } catch (error) {
      if (isFsjobError(error, 'NOT_FOUND')) {
        throw new FsjobError('NOT_A_QUEUE', `${paths.dir(dir)} is missing; repair the queue with: fsjob init --queue ${absolute}`, {
          path: paths.dir(dir),
          clause: 'LAYOUT-1',
        });
      }
      throw error;
    }
  }
  const rootDir = new Dir(absolute, fsOptions);
  const dirs = Object.fromEntries(QUEUE_DIRS.map((name) => [name, rootDir.child(name)])) as { [K in QueueDir]: Dir };
  return { root: absolute, paths, record: inspection.value, fsOptions, dirs };
}

async function isDirectory(dir: string): Promise<boolean> {
  return (await stat(dir).catch(() => undefined))?.isDirectory() === true;
}

/** What `initQueue` returns: the queue as `openQueue` opens it, and whether this call created it. */
export interface InitializedQueue extends Queue {
  /** True when this call published fsjob.json; false when the queue existed (INIT-1: init is idempotent). */
  readonly created: boolean;
}

/**
 * Creates a queue, or completes or confirms an existing one (INIT-1, INIT-2:
 * idempotent), and opens it: the result is a `Queue` like `openQueue`'s, so
 * `const queue = await initQueue(dir)` serves every call that takes one;
 * `created` says whether this call made it.
 */
export async function initQueue(root: string, options: QueueOptions = {}): Promise<InitializedQueue> {
  const absolute = path.resolve(root);
  const outer = await enclosingQueue(absolute);
  if (outer !== undefined) {
    throw new FsjobError('UNSAFE_QUEUE', `${absolute} is inside the queue ${outer} (LAYOUT-1): that queue's gc, recover and workers own every entry under it and would remove or refuse this one; choose a path outside it`, {
      path: absolute,
      clause: 'LAYOUT-1',
    });
  }
  const clock = options.clock ?? systemClock;
  const base = options.fs === undefined ? {} : { fs: options.fs };
  // Parents outside the queue (say ~/.local/state/fsjob) are ordinary directories.
  await mkdir(path.dirname(absolute), { recursive: true, mode: 0o700 });
  await ensurePrivateDir(absolute, base).catch(async (error: unknown) => {
    // mkdir says ENOENT in a parent that exists but takes no new entries (/proc, /sys):
    // "the parent does not exist" would send the operator looking for the wrong thing.
    if (!isFsjobError(error, 'NOT_FOUND') || !(await isDirectory(path.dirname(absolute)))) throw error;
    throw new FsjobError('IO', `cannot create ${absolute}: ${path.dirname(absolute)} exists but does not take new directories (mkdir failed with ENOENT); choose a queue path on an ordinary filesystem`, {
      path: absolute,
      errno: 'ENOENT',
    });
  });
  await checkQueueRoot(absolute, base);
  const fsOptions = { ...base, root: absolute };
  const paths = new QueuePaths(absolute);
  for (const dir of QUEUE_DIRS) await ensurePrivateDir(paths.dir(dir), fsOptions);
  // FS-2: before a queue is created, a filesystem without hard links or
  // rename over is refused now, not at the first claim (fsjob.json is not
  // written, so it is no queue). An existing queue is only confirmed, also
  // on a read-only mount, where the probe could not write.
  if (!(await entryPresent(paths.queueRecord(), fsOptions))) await probeFilesystem(paths.dir('tmp'), fsOptions);
  const record: QueueRecord = {
    fsjob: PROTOCOL_VERSION,
    type: 'queue',
    queue_id: randomBytes(8).toString('hex'),
    created_ms: clock.nowMs(),
  };
  let created = true;
  try {
    await publishRecord(absolute, 'fsjob.json', encodeRecord('queue', record), 'link', fsOptions);
  } catch (error) {
    if (!isFsjobError(error, 'EXISTS')) throw error;
    created = false;
  }
  return { ...(await openQueue(absolute, options)), created };
}

/**
 * The root of a queue that `dir` would lie inside (an ancestor holding
 * fsjob.json and jobs/), if any. A queue made in another's jobs/, tmp/ or a
 * job's directory is an entry LAYOUT-1 does not list there: validate flags
 * it, gc of the job or TEMP-1 removes it with every job it holds. One lstat
 * or two per ancestor, once per init; an ancestor that cannot be read is not
 * a queue this process could damage.
 */
async function enclosingQueue(dir: string): Promise<string | undefined> {
  for (let parent = path.dirname(dir); ; parent = path.dirname(parent)) {
    const record = await lstat(path.join(parent, QUEUE_RECORD)).catch(() => undefined);
    if (record?.isFile() === true && (await lstat(path.join(parent, 'jobs')).catch(() => undefined))?.isDirectory() === true) return parent;
    if (parent === path.dirname(parent)) return undefined;
  }
}

/**
 * Refuses, with USAGE, a `queue` argument that is not a `Queue`, before it
 * fails deep inside as "cannot read properties of undefined": a JavaScript
 * caller that passed a path, or the `{ queue, created }` that initQueue
 * returned before 0.1.0's one shape.
 */
export function assertQueue(queue: unknown, caller: string): asserts queue is Queue {
  const candidate = queue as Partial<Queue> | null | undefined;
  if (typeof candidate === 'object' && candidate !== null && typeof candidate.root === 'string' && typeof candidate.dirs === 'object' && candidate.paths !== undefined) return;
  const got = typeof queue === 'string' ? `the string ${JSON.stringify(queue)}` : queue === null ? 'null' : typeof queue === 'object' ? `an object with ${Object.keys(queue).join(', ') || 'no keys'}` : String(queue);
  throw new FsjobError('USAGE', `${caller} takes a Queue as its first argument (const queue = await openQueue(dir) or await initQueue(dir)), not ${got}`);
}
