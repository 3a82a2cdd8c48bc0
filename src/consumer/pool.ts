/**
 * Who of a pool of consumers listens for new jobs (spec 7.2, "Several
 * consumers"). Every consumer of a queue watches ready/ to keep its view in
 * order (ready-view.ts), but if every idle consumer woke for every enqueue,
 * all of them would race for the same new entry: N wake-ups, N scans and
 * N - 1 claims written, fsynced and lost per job, with the CPU of the jobs
 * themselves shrinking under it as N grows.
 *
 * So a consumer takes its rank among the live workers registered in the
 * queue (workers/<w>.json, WORKER-1: a fresh heartbeat, not stopping),
 * ordered by worker id, and only the first LISTENERS of them wake on a new
 * job: rank 0 at once, rank r after r × LISTENER_STEP_MS, by when rank 0
 * has usually claimed it (the later one then passes over the claim on a
 * glance, select.ts). The others look when a job of theirs ends and every
 * POOL_POLL_MS, backing off to the worker's poll interval while their looks
 * find nothing. Order is untouched: whoever looks still takes the first job
 * it can run (CLAIM-1, CLAIM-2); only when it looks changes.
 *
 * The ranks are a hint computed by each worker alone from what it read:
 * two workers may both take rank 0 for a while (both wake, as before) or a
 * dead worker's registration may hold one until its lease ends (the next
 * rank wakes LISTENER_STEP_MS later, the rest poll). Nothing depends on
 * them but latency.
 */
import type { FSWatcher } from 'node:fs';
import { WORKER_ID_PATTERN } from '../records/names.ts';
import { readRecordIn } from '../records/codec.ts';
import type { Queue } from '../model/queue.ts';
import { queueDir } from '../model/queue-dirs.ts';
import type { Clock } from '../base/clock.ts';
import { watchQueue } from './queue-watch.ts';
import type { ReadyView } from './ready-view.ts';
import type { PoolLook } from './select.ts';

/** How many ranks wake on a new job. */
export const LISTENERS = 2;
/** The delay of rank r's wake-up: r times this. */
export const LISTENER_STEP_MS = 5;
/** How often a worker that does not listen looks at the queue while idle. */
export const POOL_POLL_MS = 100;

/** How often a worker re-ranks itself from the names in workers/ (registrations come and go). */
export const RANK_REFRESH_MS = 250;

/**
 * This worker's rank among the live workers registered in a queue (0
 * first). Ranked from the names in workers/ (one listing) at most every
 * RANK_REFRESH_MS, so a pool that starts together sorts itself out within
 * that; each name's liveness (a fresh heartbeat, not stopping) comes from
 * its record, read at each of this worker's own registrations (WORKER-1),
 * and a name not read yet counts as live.
 */
export class PoolRank {
  readonly queue: Queue;
  readonly workerId: string;
  readonly clock: Clock;
  /** The rank last computed; 0 until then (a lone worker listens). */
  rank = 0;
  /** How many live workers the last ranking counted (this one included). */
  size = 1;
  private rankedMs = Number.NEGATIVE_INFINITY;
  /** Names whose record said the worker is not live, at the last reading. */
  private readonly gone = new Set<string>();

  constructor(queue: Queue, workerId: string, clock: Clock) {
    this.queue = queue;
    this.workerId = workerId;
    this.clock = clock;
  }

  /** Re-ranks when RANK_REFRESH_MS passed since the last ranking, or at once with `records` (which also reads every record). */
  async update(records = false): Promise<number> {
    const now = performance.now();
    if (!records && now - this.rankedMs < RANK_REFRESH_MS) return this.rank;
    this.rankedMs = now;
    const workers = queueDir(this.queue, 'workers');
    const live: string[] = [];
    const wallMs = this.clock.nowMs();
    for (const entry of await workers.list()) {
      const id = entry.name.endsWith('.json') ? entry.name.slice(0, -'.json'.length) : '';
      if (entry.kind !== 'file' || !WORKER_ID_PATTERN.test(id)) continue;
      if (records && id !== this.workerId) {
        let alive = false;
        try {
          const read = await readRecordIn(workers, entry.name, 'worker', { expectedWorkerId: id, allowMissing: true });
          alive = read?.ok === true && read.value.mode !== 'stopping' && wallMs - read.value.heartbeat_ms <= read.value.lease_ms;
        } catch {
          // An entry that cannot be read ranks nobody (SEC-10: workers/ entries are ignored when bad).
        }
        if (alive) this.gone.delete(id);
        else this.gone.add(id);
      }
      if (id === this.workerId || !this.gone.has(id)) live.push(id);
    }
    live.sort();
    this.rank = Math.max(0, live.indexOf(this.workerId));
    this.size = Math.max(1, live.length);
    return this.rank;
  }
}

/** What a PoolMember asks of its worker. */
export interface PoolHooks {
  /** Wake the worker's loop. */
  wake(): void;
  /** Whether the worker has a free slot (a busy one needs no wake-up). */
  free(): boolean;
  /** Whether the worker is shutting down (it watches nothing more). */
  stopping(): boolean;
}

/**
 * A serving worker's place in one queue's pool: its rank, the watchers a
 * listener keeps, and its wake-ups. Outside serve mode (drain, once) a worker
 * ranks itself 0 and listens as a lone worker does.
 */
export class PoolMember {
  readonly queue: Queue;
  readonly view: ReadyView;
  private readonly ranks: PoolRank | undefined;
  private readonly hooks: PoolHooks;
  private watchers: FSWatcher[] = [];
  /** A listener's delayed wake-up (rank × LISTENER_STEP_MS), while one is pending. */
  private timer: NodeJS.Timeout | undefined;
  /** Set by start(): from then on the watchers follow the rank. */
  private started = false;
  rank = 0;
  /** Whether this worker watches the queue (a listener). */
  listening = false;
  /** Polls in a row that claimed nothing (a worker that does not listen backs off while the listeners keep up). */
  private empty = 0;

  constructor(queue: Queue, view: ReadyView, serving: { workerId: string; clock: Clock } | undefined, hooks: PoolHooks) {
    this.queue = queue;
    this.view = view;
    this.ranks = serving === undefined ? undefined : new PoolRank(queue, serving.workerId, serving.clock);
    this.hooks = hooks;
  }

  /** How many live workers the last ranking counted. */
  get size(): number {
    return this.ranks?.size ?? 1;
  }

  /** How the worker looks at the index (select.ts): a glance only pays where other workers claim too; a worker that does not listen defers new entries. */
  look(): PoolLook {
    return this.ranks === undefined ? {} : { glance: this.size > 1, deferNew: !this.listening };
  }

  /** Whether update() has anything to do: a draining worker has no rank (it is no pool's member), so its loop need not await one. */
  due(): boolean {
    return this.ranks !== undefined;
  }

  /** Ranks again (with every record: after each registration; else from the names, at most every RANK_REFRESH_MS); the watchers follow. */
  async update(records = false): Promise<void> {
    if (this.ranks === undefined) return;
    try {
      this.rank = await this.ranks.update(records);
    } catch {
      this.rank = 0; // unknown: listen, as a lone worker does
    }
    if (this.started) this.listen();
  }

  /** The worker is set up: watch the queue when listening. */
  start(): void {
    this.started = true;
    this.listen();
  }

  /**
   * A listener watches the queue: ready/ feeds its view, jobs/ wakes it. A
   * worker that does not listen watches nothing (every event would wake its
   * process) and lists ready/ when it looks, as often as that costs a
   * fiftieth of the time (ready-view.ts).
   */
  private listen(): void {
    if (this.hooks.stopping()) return;
    this.listening = this.rank < LISTENERS;
    if (!this.listening) {
      this.close();
      return;
    }
    if (this.watchers.length > 0) return;
    this.watchers = watchQueue(this.queue, this.view, () => this.published());
    // Nothing fed the view while it was not watched: list it afresh at its next use.
    this.view.invalidate();
  }

  /** A job was published: a listener with a free slot wakes (rank 0 at once, rank r after r × LISTENER_STEP_MS). */
  private published(): void {
    if (!this.hooks.free() || this.rank >= LISTENERS) return;
    if (this.rank === 0) {
      this.hooks.wake();
      return;
    }
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      if (this.hooks.free()) this.hooks.wake();
    }, this.rank * LISTENER_STEP_MS).unref();
  }

  /** After a round of scans: whether it claimed a job. */
  polled(claimed: boolean): void {
    this.empty = claimed ? 0 : Math.min(this.empty + 1, 16);
  }

  /**
   * How long this worker may sleep when idle, for this queue: a listener is
   * woken by events and looks at `pollMs`; one that does not listen looks
   * after POOL_POLL_MS, doubling while its looks find nothing, up to `pollMs`,
   * and again after POOL_POLL_MS once one found work (a backlog the listeners
   * leave).
   */
  idleMs(pollMs: number): number {
    if (this.listening || this.rank < LISTENERS) return pollMs;
    return Math.min(pollMs, POOL_POLL_MS * 2 ** this.empty);
  }

  /** Stops watching. */
  close(): void {
    for (const watcher of this.watchers.splice(0)) watcher.close();
    this.view.watched = false;
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** How long an idle worker sleeps: the shortest of its queues' (PoolMember.idleMs). */
export function idlePollMs(members: readonly PoolMember[], pollMs: number): number {
  return Math.min(pollMs, ...members.map((member) => member.idleMs(pollMs)));
}
