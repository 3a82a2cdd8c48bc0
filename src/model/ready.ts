/**
 * The ready index (spec/claim.md): ready/<pppp>-<id>, one empty file per
 * job that may need a consumer, named so that byte order is the claim order
 * (LAYOUT-7, CLAIM-1). It is only a hint (READY-1): a consumer verifies every
 * entry against the job directory before acting, so losing an entry delays a
 * job until READY-4 rebuilds it, and a stale entry costs one look.
 *
 * Every reader and writer of ready/ goes through this module:
 * - ENQ-2 createReadyEntry, before the job is published;
 * - CLAIM-1 listReady, in claim order; countIndexed, the index's count for status;
 * - READY-2 removeReadyEntry, after a receipt;
 * - READY-3 staleReadyEntries / removeStaleReadyEntry: entries of finished
 *   jobs, and entries without a job directory once older than TEMP_MAX_AGE
 *   (the producer may be between ENQ-2 and ENQ-3);
 * - READY-4 rebuildReady: every job without a receipt gets an entry.
 */
import { TEMP_MAX_AGE } from '../base/constants.ts';
import { isFsjobError } from '../base/errors.ts';
import type { Soon } from '../base/soon.ts';
import type { EntryKind } from '../fs/safefs.ts';
import { parseReadyEntry, readyEntryId, readyEntryName } from './layout.ts';
import { jobIdOfDirName } from '../records/names.ts';
import { jobDir, locateJob, type Queue } from './queue.ts';
import { queueDir } from './queue-dirs.ts';

export interface ReadyEntry {
  name: string;
  kind: EntryKind;
  priority: number;
  id: string;
}

/** CLAIM-1: the entries whose names parse, in claim order (ascending byte order of names). */
export async function listReady(queue: Queue): Promise<ReadyEntry[]> {
  const entries: ReadyEntry[] = [];
  for (const entry of await queue.dirs.ready.list()) {
    const parsed = parseReadyEntry(entry.name);
    if (parsed !== undefined) entries.push({ name: entry.name, kind: entry.kind, ...parsed });
  }
  return entries;
}

/**
 * How many entries of ready/ name a job of `ids` (sorted ascending, as a
 * listing of jobs/ gives them): the ready index's count of unfinished jobs
 * (READY-1: a hint), without an object per entry. The listing is sorted by
 * name, that is by priority and then id, so within one priority the ids
 * rise and each is found by galloping forward from the one before: about
 * one comparison per entry when priorities are few, a binary search at worst.
 */
export async function countIndexed(queue: Queue, ids: readonly string[]): Promise<number> {
  let found = 0;
  // A job with two entries (two priorities) counts once.
  const counted = new Uint8Array(ids.length);
  let prefix = '';
  let from = 0;
  for (const entry of await queue.dirs.ready.list()) {
    const id = readyEntryId(entry.name);
    if (id === undefined) continue;
    const group = entry.name.slice(0, 4);
    if (group !== prefix) {
      prefix = group;
      from = 0;
    }
    const at = gallop(ids, id, from);
    if (at < ids.length && ids[at] === id) {
      if (counted[at] === 0) found += 1;
      counted[at] = 1;
      from = at + 1;
    } else from = at;
  }
  return found;
}

/** The first index at or after `from` whose id is not below `id` (ids sorted ascending). */
function gallop(ids: readonly string[], id: string, from: number): number {
  let step = 1;
  let low = from;
  let high = from;
  while (high < ids.length && (ids[high] as string) < id) {
    low = high + 1;
    high = from + step;
    step *= 2;
  }
  high = Math.min(high, ids.length);
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((ids[mid] as string) < id) low = mid + 1;
    else high = mid;
  }
  return low;
}

/**
 * ENQ-2 and READY-4: create the entry exclusively (PUB-7), empty and not
 * fsynced (a lost entry is rebuilt, READY-4). Throws EXISTS when it is there.
 */
export async function createReadyEntry(queue: Queue, priority: number, id: string): Promise<void> {
  const handle = await queueDir(queue, 'ready').create(readyEntryName(priority, id));
  await handle.close().catch(() => undefined);
}

/**
 * READY-2/READY-3: remove a job's entry. With the priority the name is known;
 * without it (no readable spec) ready/ is listed for the id.
 */
export async function removeReadyEntry(queue: Queue, id: string, priority?: number): Promise<void> {
  await removeReadyEntrySoon(queue, id, priority);
}

/** removeReadyEntry, done before it returns where the name is known and the unlink answers at once (write.ts, removeSoon). */
export function removeReadyEntrySoon(queue: Queue, id: string, priority?: number): Soon<unknown> {
  if (priority !== undefined) return queueDir(queue, 'ready').removeSoon(readyEntryName(priority, id));
  return removeListed(queue, id);
}

async function removeListed(queue: Queue, id: string): Promise<void> {
  for (const entry of await listReady(queue)) {
    if (entry.id === id) await queue.dirs.ready.remove(entry.name);
  }
}

/**
 * READY-3 for an entry whose job directory does not exist under either name
 * (GATE-4: a gated job's entry is not stale): removed once older than
 * TEMP_MAX_AGE; true when removed.
 */
export async function removeStaleReadyEntry(queue: Queue, name: string, nowMs: number): Promise<boolean> {
  const info = await queue.dirs.ready.stat(name);
  if (info === undefined || nowMs - info.mtimeMs <= TEMP_MAX_AGE) return false;
  const id = readyEntryId(name);
  if (id !== undefined && (await locateJob(queue, id)) !== 'missing') return false;
  return queue.dirs.ready.remove(name);
}

/**
 * READY-3 over the whole index: the names of regular-file entries that may
 * go, because their job is finished (a receipt.json of any kind, STATUS-1, or
 * an id of `finished`) or because no job directory exists and the entry is
 * older than TEMP_MAX_AGE. Nothing is removed here. An entry whose job name
 * is something other than a directory (a planted link) stays: validate
 * reports it.
 */
export async function staleReadyEntries(queue: Queue, nowMs: number, finished: ReadonlySet<string> = new Set()): Promise<string[]> {
  const stale: string[] = [];
  for (const entry of await listReady(queue)) {
    if (entry.kind !== 'file') continue;
    if (finished.has(entry.id)) {
      stale.push(entry.name);
      continue;
    }
    const job = await queue.dirs.jobs.stat(entry.id);
    if (job === undefined) {
      const info = await queue.dirs.ready.stat(entry.name);
      // GATE-4: the entry of a gated job is not stale.
      if (info !== undefined && nowMs - info.mtimeMs > TEMP_MAX_AGE && (await locateJob(queue, entry.id)) === 'missing') stale.push(entry.name);
    } else if (job.kind === 'dir' && (await jobDir(queue, entry.id).present('receipt.json'))) {
      stale.push(entry.name);
    }
  }
  return stale;
}

/** How many receipt lstats rebuildReady keeps in flight (the libuv pool has 4 threads by default). */
const REBUILD_BATCH = 64;

/** The priority a rebuilt entry gets: the spec's, or undefined when it has no valid spec (the entry is then named with 0); `gated` when the job is at jobs/<id>.gated. */
export type PriorityOf = (id: string, gated: boolean) => Promise<number | undefined>;

/**
 * READY-4: every job directory without a receipt gets a ready entry. A full
 * scan of jobs/, done when a consumer starts and by recover. Returns the ids
 * whose entries were created.
 *
 * Finished jobs, the bulk of a long-lived queue, cost one lstat each: a
 * receipt.json entry of any kind makes a job finished (STATUS-1). Only the
 * jobs left (no ready entry, no receipt) get a closer look. The lstats run
 * REBUILD_BATCH at a time: 100,000 finished jobs took 140 s to start with a
 * full listing each.
 */
export async function rebuildReady(queue: Queue, priorityOf: PriorityOf): Promise<string[]> {
  const present = new Set((await listReady(queue)).map((entry) => entry.id));
  // LAYOUT-4: jobs/<id> and jobs/<id>.gated (GATE-1); anything else in jobs/ is foreign: never opened.
  const candidates = (await queue.dirs.jobs.list())
    .filter((entry) => entry.kind === 'dir')
    .map((entry) => ({ name: entry.name, id: jobIdOfDirName(entry.name) }))
    .filter((entry): entry is { name: string; id: string } => entry.id !== undefined && !present.has(entry.id));
  const rebuilt: string[] = [];
  for (let start = 0; start < candidates.length; start += REBUILD_BATCH) {
    const batch = candidates.slice(start, start + REBUILD_BATCH);
    // A failed lstat reads as "no receipt": the job then gets the full look below.
    const finished = await Promise.all(batch.map((entry) => queue.dirs.jobs.child(entry.name).present('receipt.json').catch(() => false)));
    for (const [index, entry] of batch.entries()) {
      if (finished[index] !== true && (await rebuildEntry(queue, entry.name, entry.id, priorityOf))) rebuilt.push(entry.id);
    }
  }
  return rebuilt;
}

/** The entry of one job that has none and no receipt (READY-4); true when it was created. */
async function rebuildEntry(queue: Queue, dirName: string, id: string, priorityOf: PriorityOf): Promise<boolean> {
  // The receipt is looked for again with the directory's full checks: a job that is not a real directory of ours gets nothing.
  try {
    const receipt = await queue.dirs.jobs.child(dirName).stat('receipt.json');
    if (receipt !== undefined) return false;
  } catch {
    return false;
  }
  // An invalid spec still needs an entry, so that a consumer rejects the job.
  const priority = await priorityOf(id, dirName !== id).catch(() => undefined);
  try {
    await createReadyEntry(queue, priority ?? 0, id);
    return true;
  } catch (error) {
    if (!isFsjobError(error, 'EXISTS')) throw error;
    return false;
  }
}
