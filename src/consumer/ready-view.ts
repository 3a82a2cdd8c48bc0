/**
 * A consumer's view of ready/ (spec/claim.md) in claim order, kept in memory
 * so that a claim does not list and sort the whole index: over 100,000
 * queued jobs a listing costs ~100 ms, and a claim listed it every time.
 *
 * The view is a hint about a hint (READY-1): every name it yields is verified
 * against the job directory before anything is done to the job, exactly as a
 * fresh listing's would be. It is kept current by
 * - what this consumer learns itself: a receipt it published or found
 *   (`remove`), an entry it rebuilt (`add`);
 * - fs.watch events of ready/ (`touched`): the name is noted, and one lstat
 *   of it says whether it came or went when the view is next used
 *   (`current`). A consumer whose slots are all busy takes events at no
 *   more cost than the callback: an entry created and removed while it was
 *   busy costs one lstat, or none once the view is listed afresh;
 * - a full listing, the truth, when the view is older than its refresh
 *   interval (`due`), when no watcher feeds it (then as often as costs a
 *   fiftieth of the time: a consumer of a pool that does not listen, or a
 *   filesystem without inotify), and before a consumer concludes that
 *   nothing is left (drain and once modes).
 *
 * Names are kept in a sorted array read from a head index, removals are
 * tombstones (a name absent from `present`), compacted once they outnumber
 * the live names; new names usually sort last (ids grow with time) and are
 * appended, so a claim costs O(log n) at any depth.
 */
import { parseReadyEntry } from '../model/layout.ts';
import type { Queue } from '../model/queue.ts';
import { queueDir } from '../model/queue-dirs.ts';
import { listReady, type ReadyEntry } from '../model/ready.ts';

/** Shortest interval between two full listings while watchers feed the view. */
export const VIEW_REFRESH_MIN_MS = 5_000;
/** The interval is at least this many times the last listing's duration (a deep index is listed less often). */
const REFRESH_COST_FACTOR = 50;
const COMPACT_MIN = 1_024;
/** Watch events noted between two uses of the view before a full listing is cheaper. */
const TOUCHED_MAX = 4_096;
/**
 * How long a consumer waits for another's claim in flight on one entry
 * (its temp file, before its link: select.ts) before it claims the job
 * itself: a claim takes one fsync, and a temp whose writer died stays until
 * GC, so the wait is bounded, never a skip.
 */
export const CLAIM_IN_FLIGHT_MAX_MS = 100;

export class ReadyView {
  readonly queue: Queue;
  private names: string[] = [];
  private head = 0;
  private readonly present = new Map<string, ReadyEntry>();
  private readonly byId = new Map<string, string>();
  /** Bumped whenever positions in `names` shift, so a walk re-finds its place. */
  private version = 0;
  private listedMs = Number.NEGATIVE_INFINITY;
  /** How long the last full listing took. */
  private listingMs = 0;
  private intervalMs = VIEW_REFRESH_MIN_MS;
  private lost = true;
  /** Watch results that arrived while a listing was under way: applied again after it. */
  private during: [string, boolean][] | undefined;
  /** Names watch events touched since the view was last used: looked at by the next current(). */
  private readonly touchedNames = new Set<string>();
  /** Names whose job was seen claimed by another consumer (held) once already: looked at in full next time. */
  private readonly glanced = new Set<string>();
  /** Names whose job another consumer was seen claiming (a claim's temp file), and when first (performance.now()). */
  private readonly claiming = new Map<string, number>();
  /** Full listings made so far, and the one each listed name first appeared in. */
  private listings = 0;
  private readonly firstListed = new Map<string, number>();
  /** Whether fs.watch feeds the view; without it every scan lists ready/. */
  watched = false;

  constructor(queue: Queue) {
    this.queue = queue;
  }

  get size(): number {
    return this.present.size;
  }

  /** Whether the view holds an entry of job `id` (no system call: a hint about a hint, READY-1). */
  hasId(id: string): boolean {
    return this.byId.has(id);
  }

  /**
   * True when the view must be listed afresh before it is used: when lost,
   * when its refresh interval passed, and, when no watcher feeds it, once
   * REFRESH_COST_FACTOR times the last listing's duration passed (a shallow
   * index at nearly every use, 100,000 entries every few seconds).
   */
  due(nowMs: number = performance.now()): boolean {
    const since = nowMs - this.listedMs;
    return this.lost || since >= this.intervalMs || (!this.watched && since >= REFRESH_COST_FACTOR * this.listingMs);
  }

  /** When the last full listing started (performance.now()); -Infinity before the first. */
  get listedAtMs(): number {
    return this.listedMs;
  }

  /** Marks the view as possibly incomplete (a watch event without a name, an overflow): the next use lists ready/. */
  invalidate(): void {
    this.lost = true;
  }

  /** The full listing (CLAIM-1's order), which replaces the view. */
  async refresh(): Promise<void> {
    const started = performance.now();
    // Marked before listing: an event that arrives during the listing is applied again after it
    // (in order: every later change of a name brings its own event, whose lstat comes later).
    this.lost = false;
    this.during = [];
    let entries: ReadyEntry[];
    try {
      entries = await listReady(this.queue);
    } catch (error) {
      this.during = undefined;
      this.lost = true;
      throw error;
    }
    const during = this.during;
    this.during = undefined;
    this.listings += 1;
    const seen = new Map<string, number>();
    for (const entry of entries) seen.set(entry.name, this.firstListed.get(entry.name) ?? this.listings);
    this.firstListed.clear();
    for (const [name, at] of seen) this.firstListed.set(name, at);
    this.names = entries.map((entry) => entry.name);
    this.head = 0;
    this.present.clear();
    this.byId.clear();
    this.glanced.clear();
    // Kept across listings (a view that no watcher feeds is listed at nearly every scan): the bound of a wait must hold.
    for (const name of this.claiming.keys()) if (!seen.has(name)) this.claiming.delete(name);
    for (const entry of entries) {
      this.present.set(entry.name, entry);
      this.byId.set(entry.id, entry.name);
    }
    this.version += 1;
    for (const [name, exists] of during) this.changed(name, exists);
    const ended = performance.now();
    this.listedMs = started;
    this.listingMs = ended - started;
    this.intervalMs = Math.max(VIEW_REFRESH_MIN_MS, REFRESH_COST_FACTOR * this.listingMs);
  }

  /** Whether current() has nothing to do: not due, no name touched since (a caller need not await it then). */
  fresh(): boolean {
    return this.touchedNames.size === 0 && !this.due();
  }

  /** Lists ready/ when the view is due; otherwise looks at the names watch events touched meanwhile. */
  async current(): Promise<void> {
    if (this.due()) {
      this.touchedNames.clear();
      await this.refresh();
      return;
    }
    if (this.touchedNames.size === 0) return;
    const ready = queueDir(this.queue, 'ready');
    for (const name of this.touchedNames) this.changed(name, await ready.present(name));
    this.touchedNames.clear();
  }

  /**
   * A watch event named `name` (its kind is not trusted): looked at when
   * the view is next used. Past TOUCHED_MAX pending names the view is listed
   * afresh instead.
   */
  touched(name: string): void {
    if (this.touchedNames.size >= TOUCHED_MAX) {
      this.touchedNames.clear();
      this.invalidate();
      return;
    }
    this.touchedNames.add(name);
  }

  /**
   * Whether entry `name` appeared in the latest full listing and in none
   * before it: a job that has waited less than one listing interval. A
   * consumer that does not listen (pool.ts) stops its walk there and looks
   * again at its next poll, leaving the new job to the listeners meanwhile:
   * a delay, never a skip (CLAIM-2).
   */
  newlyListed(name: string): boolean {
    return this.firstListed.get(name) === this.listings;
  }

  /**
   * Whether the job of entry `name` was seen held by another consumer once
   * (select.ts glances at two names before it looks at a job in full); marks
   * it so. Forgotten with the entry.
   */
  glancedOnce(name: string): boolean {
    if (this.glanced.has(name)) return true;
    this.glanced.add(name);
    return false;
  }

  /**
   * Another consumer's claim of entry `name`'s job is in flight: how long
   * to wait for it (the walk ends here and looks again then), or null to
   * claim it now. The wait doubles, from `firstMs`, with the time already
   * waited (a claim takes longer on a loaded machine, and every look costs
   * a scan), until CLAIM_IN_FLIGHT_MAX_MS after the claim was first seen.
   * Forgotten with the entry.
   */
  waitForClaim(name: string, firstMs: number, nowMs: number = performance.now()): number | null {
    const since = this.claiming.get(name);
    if (since === undefined) {
      this.claiming.set(name, nowMs);
      return firstMs;
    }
    const waited = nowMs - since;
    return waited < CLAIM_IN_FLIGHT_MAX_MS ? Math.min(Math.max(firstMs, waited), CLAIM_IN_FLIGHT_MAX_MS - waited) : null;
  }

  /** Whether this consumer waited for a claim in flight on entry `name` (then its next look glances again). */
  waitedForClaim(name: string): boolean {
    return this.claiming.has(name);
  }

  /** An entry that exists (or may): inserted in order. Names that are not ready entries are ignored. */
  add(name: string): void {
    if (this.present.has(name)) return;
    const parsed = parseReadyEntry(name);
    if (parsed === undefined) return;
    this.present.set(name, { name, kind: 'file', ...parsed });
    this.byId.set(parsed.id, name);
    const names = this.names;
    const last = names.length - 1;
    if (last < this.head || (names[last] as string) < name) {
      names.push(name);
      return;
    }
    let low = this.head;
    let high = names.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((names[mid] as string) < name) low = mid + 1;
      else high = mid;
    }
    // A tombstone of the same name is reused: the name came back (READY-4 rebuilt it).
    if (names[low] !== name) {
      names.splice(low, 0, name);
      this.version += 1;
    }
  }

  /** An entry that is gone, or whose job is finished: it is no longer offered. */
  remove(name: string): void {
    const entry = this.present.get(name);
    if (entry === undefined) return;
    this.present.delete(name);
    this.glanced.delete(name);
    this.claiming.delete(name);
    if (this.byId.get(entry.id) === name) this.byId.delete(entry.id);
    const dead = this.names.length - this.head - this.present.size;
    if (dead > COMPACT_MIN && dead > this.present.size) {
      this.names = this.names.slice(this.head).filter((n) => this.present.has(n));
      this.head = 0;
      this.version += 1;
    }
  }

  /** remove() by job id: the job's receipt is published or was found (READY-2, READY-3). */
  finished(id: string): void {
    const name = this.byId.get(id);
    if (name !== undefined) this.remove(name);
  }

  /**
   * A watch event for `name` in ready/: `exists` says what one lstat found
   * (the caller looks, so that the view never trusts an event's kind).
   */
  changed(name: string, exists: boolean): void {
    this.during?.push([name, exists]);
    if (exists) this.add(name);
    else this.remove(name);
  }

  /**
   * The live entries in claim order, from the head. Safe against changes
   * made while the caller awaits between two entries: a walk continues
   * after the last name it was given.
   */
  *entries(): Generator<ReadyEntry> {
    let index = this.head;
    let version = this.version;
    let last: string | undefined;
    for (;;) {
      if (version !== this.version) {
        index = this.after(last);
        version = this.version;
      }
      if (index >= this.names.length) return;
      const name = this.names[index] as string;
      index += 1;
      const entry = this.present.get(name);
      if (entry === undefined) {
        // Tombstones at the head are dropped for good.
        if (index - 1 === this.head) this.head = index;
        continue;
      }
      last = name;
      yield entry;
    }
  }

  /** The index of the first name after `name` (all of them from the head when undefined). */
  private after(name: string | undefined): number {
    if (name === undefined) return this.head;
    let low = this.head;
    let high = this.names.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((this.names[mid] as string) <= name) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}

/**
 * Drain and once modes end only after a round over views listed in that
 * round (a watch event may have been missed): marks the views listed before
 * `roundMs` for listing and says whether there were any (then one more round).
 */
export function relistBeforeEnd(views: readonly ReadyView[], roundMs: number): boolean {
  const unlisted = views.filter((view) => view.listedAtMs < roundMs);
  for (const view of unlisted) view.invalidate();
  return unlisted.length > 0;
}
