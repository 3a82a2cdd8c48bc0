/**
 * Lane and dedupe holds (spec/lanes.md and spec/producer.md): a numbered sequence of
 * write-once hold records per key, `<kind>/<sha256(key)>/<n>.json`.
 *
 * Only the highest-numbered hold matters. Taking a key means publishing hold
 * n + 1 by link when hold n is not *held*; link() fails if someone else got
 * there first, so at most one process takes each number. Nobody removes the
 * highest hold (LANE-3), which is what keeps the sequence from ever going
 * backwards: a hold is released by its job finishing, never by deletion.
 * Lower holds are removed, so a taker that slept between its look and its
 * link can re-create a removed number: one more listing after the link tells
 * (LANE-2, DEDUPE-2).
 */
import { slotHash } from './layout.ts';
import { dirPresent, ensurePrivateDir, fsyncDir, listDir, publishRecord, removeTree, type DirEntry } from '../fs/safefs.ts';
import { encodeRecord, parseHoldNumber, readRecord, type HoldRecord } from '../records/codec.ts';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import type { Finding } from '../records/findings.ts';
import { DEDUPE_STAGE_MAX, DEDUPE_TRIES, LEASE_DEFAULT, LEASE_SKEW, PROTOCOL_VERSION } from '../base/constants.ts';
import type { Queue } from './queue.ts';
import { isLocal, judgeOwner, selfIdentity } from './identity.ts';
import { deriveStatus, executionState, listJob, type StatusOptions } from './job.ts';
import type { Clock } from '../base/clock.ts';
import { systemClock } from '../base/clock.ts';
import path from 'node:path';

export type HoldKind = 'dedupe' | 'lane';

/** LANE-5: how many slots of its lane a job may use: its lane_slots (absent: 1, SPEC-2). */
export function laneSlotsOf(spec: { lane_slots?: number }): number {
  return spec.lane_slots ?? 1;
}

/** Listings of a key before currentHold gives up on holds that vanish as it reads them. */
const HOLD_LOOKS = 100;

const DIR_OF: Record<HoldKind, 'dedupe' | 'lanes'> = { dedupe: 'dedupe', lane: 'lanes' };

export interface HoldView {
  n: number;
  /** The record, or undefined when the file could not be read validly. */
  hold?: HoldRecord;
  findings: Finding[];
}

/** Decides whether a hold still holds its key; unreadable holds are treated as held by the caller. */
export type HeldJudge = (hold: HoldRecord) => Promise<boolean>;

export type TakeResult = { taken: true; n: number } | { taken: false; current: HoldView };

/** The directory of a key's holds: dedupe/<sha256(key)>, or the lane slot's (LANE-6: slot 1 is the key's own). */
export function holdDir(queue: Queue, kind: HoldKind, key: string, slot = 1): string {
  return path.join(queue.root, DIR_OF[kind], kind === 'lane' ? slotHash(key, slot) : slotHash(key, 1));
}

/**
 * The highest-numbered hold of a key, read and checked, or undefined when there is none.
 * A hold listed as the highest may vanish before it is read: LANE-3 lets
 * whoever published a higher one remove it. That proves a higher hold exists,
 * so the key is listed again; the highest hold is never removed, so this ends.
 */
export async function currentHold(queue: Queue, kind: HoldKind, key: string, slot = 1): Promise<HoldView | undefined> {
  const dir = holdDir(queue, kind, key, slot);
  for (let look = 0; look < HOLD_LOOKS; look++) {
    let entries;
    try {
      entries = await listDir(dir, queue.fsOptions);
    } catch (error) {
      if (isFsjobError(error, 'NOT_FOUND')) return undefined;
      throw error;
    }
    const top = Math.max(0, ...holdsIn(entries).map((hold) => hold.n));
    if (top === 0) return undefined;
    const read = await readRecord(path.join(dir, `${top}.json`), 'hold', {
      ...queue.fsOptions,
      expectedKind: kind,
      expectedKeyHash: path.basename(dir),
      allowMissing: true,
    });
    if (read === undefined) continue; // pruned below a newer hold (LANE-3, DEDUPE-4): look again
    return read.ok ? { n: top, hold: read.value, findings: read.findings } : { n: top, findings: read.findings };
  }
  throw new FsjobError('IO', `the highest ${kind} hold of ${JSON.stringify(key)} kept vanishing before it could be read: too much contention`, {
    path: dir,
    clause: kind === 'lane' ? 'LANE-2' : 'DEDUPE-2',
  });
}

export interface TakeOptions {
  clock?: Clock;
  /** The job and (lanes) claim generation the hold is for. */
  jobId: string;
  gen: number | null;
  tries?: number;
  /** The lane slot (LANE-5, LANE-6). @default 1 */
  slot?: number;
}

/**
 * LANE-2 / DEDUPE-2: take the key unless its highest hold is held. An
 * unreadable highest hold counts as held: a key is never taken on a guess.
 */
export async function takeHold(queue: Queue, kind: HoldKind, key: string, isHeld: HeldJudge, options: TakeOptions): Promise<TakeResult> {
  const clock = options.clock ?? systemClock;
  const slot = kind === 'lane' ? (options.slot ?? 1) : 1;
  const dir = holdDir(queue, kind, key, slot);
  await ensurePrivateDir(dir, queue.fsOptions);
  // PUB-5: a hold is durable only if its key directory's entry is, so the
  // parent (dedupe/, lanes/) is fsynced before the hold is published; also
  // when another process created the directory, which may have died before
  // its own fsync. A power loss would otherwise drop the whole key.
  await fsyncDir(path.dirname(dir), queue.fsOptions);
  const owner = await selfIdentity();
  const tries = options.tries ?? DEDUPE_TRIES;
  for (let attempt = 0; attempt < tries; attempt++) {
    const current = await currentHold(queue, kind, key, slot);
    if (current !== undefined && (current.hold === undefined || (await isHeld(current.hold)))) {
      return { taken: false, current };
    }
    const n = (current?.n ?? 0) + 1;
    const record: HoldRecord = {
      fsjob: PROTOCOL_VERSION,
      type: 'hold',
      kind,
      key,
      job_id: options.jobId,
      gen: kind === 'lane' ? options.gen : null,
      owner,
      created_ms: clock.nowMs(),
      // LANE-6: slot 1's holds carry no slot, as 1.1's lane holds.
      ...(slot > 1 ? { slot } : {}),
    };
    try {
      await publishRecord(dir, `${n}.json`, encodeRecord('hold', record), 'link', queue.fsOptions);
    } catch (error) {
      if (isFsjobError(error, 'EXISTS')) continue; // someone took n first: look again
      throw error;
    }
    // LANE-2, DEDUPE-2 (1.1): while this process was between its look at hold
    // n - 1 and its link, others may have taken n and n + 1 and removed n
    // (LANE-3): the link then re-created a number below the highest, which
    // takes nothing. From the moment n was removed some hold above it exists
    // at every instant (the highest is never removed), and a key's directory
    // is a few entries, read by one getdents call under the directory's lock.
    const after = holdsIn(await listDir(dir, queue.fsOptions));
    if (after.some((hold) => hold.n > n)) continue;
    await removeHolds(queue, dir, after.filter((hold) => hold.n < n));
    return { taken: true, n };
  }
  // LANE-2: after 100 lost links the lane counts as busy (the job gets a lane_busy end record, CLAIM-6 step 8).
  const last = kind === 'lane' ? await currentHold(queue, kind, key) : undefined;
  if (last !== undefined) return { taken: false, current: last };
  throw new FsjobError('IO', `could not take the ${kind} key ${JSON.stringify(key)} after ${tries} tries: too much contention`, {
    path: dir,
    clause: kind === 'lane' ? 'LANE-2' : 'DEDUPE-2',
  });
}

/** The holds among a key directory's entries, by number (other names are skipped). */
function holdsIn(entries: readonly DirEntry[]): { n: number; entry: DirEntry }[] {
  const holds: { n: number; entry: DirEntry }[] = [];
  for (const entry of entries) {
    if (!entry.name.endsWith('.json')) continue;
    const n = parseHoldNumber(entry.name.slice(0, -'.json'.length));
    if (n !== undefined) holds.push({ n, entry });
  }
  return holds;
}

/** GC-2 / LANE-3: holds numbered below one we published are garbage (the highest never is); a removal that fails is left to gc. */
async function removeHolds(queue: Queue, dir: string, holds: readonly { entry: DirEntry }[]): Promise<void> {
  for (const { entry } of holds) {
    if (entry.kind === 'file') await removeTree(path.join(dir, entry.name), queue.fsOptions).catch(() => undefined);
  }
}

/**
 * DEDUPE-3: a dedupe hold is held while its job is published and unfinished,
 * or, before publication, while the producer's staging directory exists and
 * the producer may still be alive.
 */
export async function dedupeHeld(queue: Queue, hold: HoldRecord, options: { clock?: Clock } = {}): Promise<boolean> {
  const unfinished = async (): Promise<boolean> => !(await listJob(queue, hold.job_id)).receipt;
  if (await published(queue, hold.job_id)) return unfinished();
  if (await stagedHoldCounts(queue, hold, options.clock ?? systemClock)) return true;
  // Every "not held" is decided after a last look at jobs/: the producer may
  // have renamed tmp/<id> to jobs/<id> (ENQ-3, one way, atomic) since the
  // first look, and then exited, so that its staging is gone or its pid
  // dead by the time this judge looks. Without this look a producer that
  // publishes and exits at that instant shares its key (seen: two jobs
  // accepted for one key by eight racing producers).
  return (await published(queue, hold.job_id)) && unfinished();
}

/** Whether the job's directory is in jobs/, open or gated (GATE-4: a gate only opens, so the open name is looked at again last). */
async function published(queue: Queue, id: string): Promise<boolean> {
  for (const path of [queue.paths.job(id), queue.paths.gatedJob(id), queue.paths.job(id)]) {
    if (await dirPresent(path, queue.fsOptions)) return true;
  }
  return false;
}

/** DEDUPE-3 before publication: whether the hold of a job not (yet) seen in jobs/ still counts through its staging. */
async function stagedHoldCounts(queue: Queue, hold: HoldRecord, clock: Clock): Promise<boolean> {
  if (!(await dirPresent(queue.paths.staging(hold.job_id), queue.fsOptions))) return false;
  // A staged job's hold counts for DEDUPE_STAGE_MAX (+ skew) after it was
  // taken, on any host (its producer never publishes later, DEDUPE-5), and
  // no longer once a same-host producer is proven dead.
  const now = clock.nowMs();
  if (now > hold.created_ms + DEDUPE_STAGE_MAX + LEASE_SKEW) return false;
  if (!(await isLocal(hold.owner))) return true;
  const verdict = await judgeOwner(hold.owner, { nowMs: now, lastRenewalMs: hold.created_ms, leaseMs: LEASE_DEFAULT });
  return verdict.verdict !== 'dead';
}

/**
 * LANE-2: a lane hold is held while its job is unfinished and either its
 * generation's claim is the open one with an owner alive or unknown, or that
 * generation recorded an execution not proven stopped.
 */
export async function laneHeld(queue: Queue, hold: HoldRecord, options: Pick<StatusOptions, 'clock' | 'leases'> = {}): Promise<boolean> {
  if (hold.gen === null || !(await dirPresent(queue.paths.job(hold.job_id), queue.fsOptions))) return false;
  const files = await listJob(queue, hold.job_id);
  if (files.receipt) return false;
  if (hold.gen === files.gen && !files.ends.has(hold.gen)) {
    const view = await deriveStatus(queue, files, options);
    if (view.owner !== undefined && view.owner.verdict !== 'dead') return true;
  }
  const execution = await executionState(queue, files, hold.gen, options);
  return execution === 'running' || execution === 'unknown';
}
