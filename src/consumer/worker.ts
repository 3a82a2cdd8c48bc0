/**
 * The long-running consumer (spec/workers.md): N slots over one or more queues.
 *
 * - Queues are served round-robin, one claim per turn, so a busy queue cannot
 *   starve the others (seed 004's capacity and round-robin).
 * - It registers itself in each queue (workers/<w>.json), renews the
 *   registration every RENEW_INTERVAL and removes it on a clean exit
 *   (WORKER-1).
 * - The guardian is running before any command starts; if it dies the worker
 *   restarts it and claims no command job until it is back (WORKER-2, fail
 *   closed). So is the spawner that forks every command (spawner.ts; where it
 *   cannot run, node forks them itself): if it dies, no command job is
 *   claimed until a new one answers.
 * - It wakes on fs.watch events of jobs/ (a job was published; ready/'s
 *   events keep its view of the index current) and polls at least every
 *   second in case an event is missed (a watch is a hint, like the index).
 *   In a pool of serving workers only the first LISTENERS by rank watch and
 *   wake; the others look when a job of theirs ends and every POOL_POLL_MS
 *   (pool.ts), so N workers do not all wake and race for every new job.
 * - stop() is the graceful shutdown of WORKER-3: no new claims, running
 *   attempts get up to CANCEL_GRACE to end on their own, then each is stopped
 *   and its generation ended (an end record, or a `lost` receipt when no
 *   attempt remains), and the registration is removed.
 * - A queue removed (or replaced) underneath is noticed at the next failed scan
 *   (WORKER-4, seed 000's abandoned-root check): the worker stops what runs
 *   there, recreates nothing, and run() rejects with NOT_A_QUEUE.
 * - Recovery limits (seed 004): a job whose attempt could not start, or whose
 *   orphaned execution cannot be proven stopped, is left alone for a while.
 */
import { CONSUME_RETRY_WAIT, renewInterval } from '../base/constants.ts';
import { monotonicMs } from '../base/clock.ts';
import { FsjobError } from '../base/errors.ts';
import type { Queue } from '../model/queue.ts';
import { beginOperation, removeTree } from '../fs/safefs.ts';
import type { ClaimPolicy, RunTicket } from './claim.ts';
import { makeContext, newWorkerId, openServed, openWith, type ConsumerEvent, type ConsumerOptions, type Context } from './context.ts';
import { Guardian } from './guardian.ts';
import { Spawner } from './spawner.ts';
import { CommandSupport } from './command-support.ts';
import { runCommand, type RunningJob, type RunOutcome } from './run.ts';
import { runPayload, type Handler } from './payload.ts';
import { ReadyView, relistBeforeEnd } from './ready-view.ts';
import { claimNextIn, rebuildReady, type SelectFilter } from './select.ts';
import { ScanBackoff } from './scan-backoff.ts';
import { PoolMember, idlePollMs } from './pool.ts';
import { publishRegistration } from './registration.ts';
import { newSummary, tally, type WorkerSummary } from './summary.ts';

export type { WorkerSummary } from './summary.ts';

/** How long a Worker runs: 'serve' until stop(), 'drain' until nothing it can run is left, 'once' one job. */
export type WorkerMode = 'serve' | 'drain' | 'once';

/** Options of a Worker: the queues it serves, how many jobs at once, and for how long. */
export interface WorkerOptions extends ConsumerOptions {
  /** Queue roots (or opened queues) to serve, round-robin. */
  queues: readonly (string | Queue)[];
  /** Jobs run at once, 1 to 1024 (CLAIM-8). @default 1 */
  concurrency?: number;
  /**
   * 'serve': until stop(); 'drain': until no job remains that this worker can
   * make progress on (retry delays are waited out, jobs held by other live
   * consumers are not); 'once': one job, then as 'drain'. @default 'serve'
   */
  mode?: WorkerMode;
  /** Run command jobs (false: payload jobs only). @default true */
  commands?: boolean;
  /** Longest wait between two scans when no event arrives. @default 1000 */
  pollMs?: number;
  /** The guardian (WORKER-2). @default a new Guardian */
  guardian?: Guardian;
  /** The process that forks every command (spawner.ts). @default a new Spawner */
  spawner?: Spawner;
}


interface QueueSlot {
  queue: Queue;
  /** Whether the last scan found the queue paused (PAUSE-1). */
  paused: boolean;
  /** ready/ in claim order, kept current by watch events and listed afresh when due. */
  view: ReadyView;
  /** This worker's place in the queue's pool: rank, watchers, wake-ups (pool.ts). */
  member: PoolMember;
}

interface InFlight {
  slot: QueueSlot;
  job: RunningJob;
}


const CONCURRENCY_MAX = 1024;
/** After this many attempts of one job that could not start, leave it for FAILURE_PAUSE. */
const FAILURE_LIMIT = 3;
const FAILURE_PAUSE = 600_000;

/**
 * A long-running consumer (spec/workers.md): registers itself (WORKER-1), starts
 * a guardian (WORKER-2), claims jobs from its queues round-robin and runs up
 * to `concurrency` at once, command jobs as process groups and payload jobs
 * through the handlers given to `handle()`, and publishes exactly one receipt
 * per job. `run()` resolves with a summary when the mode says it is done;
 * `stop()` ends it gracefully (WORKER-3).
 */
export class Worker {
  readonly id: string;
  private readonly options: WorkerOptions;
  private readonly handlers = new Map<string, Handler>();
  private readonly concurrency: number;
  private readonly mode: WorkerMode;
  private readonly pollMs: number;
  private readonly guardian: Guardian | undefined;
  private readonly spawner: Spawner | undefined;
  /** The guardian and the spawner, once run() started them. */
  private commands: CommandSupport | undefined;
  private ctx: Context | undefined;
  private slots: QueueSlot[] = [];
  private readonly inFlight = new Map<string, InFlight>();
  private readonly avoidUntil = new Map<string, number>(); // until a monotonic instant: a wall clock that goes back must not lengthen the pause (LEASE-4)
  private readonly failures = new Map<string, number>();
  private readonly wakers = new Set<() => void>();
  /** Roots found no longer holding the queue this worker opened (WORKER-4). */
  private readonly lostRoots = new Set<string>();
  private stopping = false;
  /** Why stop() was called ("SIGTERM"), for the shutdown events. */
  private stopReason = 'stop requested';
  /** Ends the shutdown grace early (a second stop(), stopNow()). */
  private endGrace: (() => void) | undefined;
  private graceEnded = false;
  /** Why the worker stopped on its own (an abandoned queue); run() rejects with it. */
  private fatal: FsjobError | undefined;
  private woken = false;
  private started = false;
  private nextQueue = 0;
  private startedMs = 0;
  private registrationTimer: NodeJS.Timeout | undefined;
  private readonly summary: WorkerSummary;
  private readonly scans = new ScanBackoff();

  constructor(options: WorkerOptions) {
    if (options.queues.length === 0) throw new FsjobError('USAGE', 'a worker needs at least one queue');
    const concurrency = options.concurrency ?? 1;
    if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > CONCURRENCY_MAX) {
      throw new FsjobError('USAGE', `concurrency ${concurrency} is outside 1..${CONCURRENCY_MAX}`, { clause: 'CLAIM-8' });
    }
    this.options = options;
    this.id = newWorkerId();
    this.concurrency = concurrency;
    this.mode = options.mode ?? 'serve';
    this.pollMs = Math.min(options.pollMs ?? 1000, 1000);
    this.guardian = options.commands === false ? undefined : (options.guardian ?? new Guardian());
    this.spawner = options.commands === false ? undefined : (options.spawner ?? new Spawner());
    this.summary = newSummary(this.id);
  }

  /** Registers an in-process handler for payload jobs (PAYLOAD-1). */
  handle(name: string, handler: Handler): this {
    if (!/^[a-z0-9][a-z0-9._-]{0,63}$/.test(name)) throw new FsjobError('USAGE', `handler name ${JSON.stringify(name)} does not match ^[a-z0-9][a-z0-9._-]{0,63}$ (SPEC-1)`);
    this.handlers.set(name, handler);
    return this;
  }

  /**
   * WORKER-3: stop claiming and shut down gracefully; run() resolves when
   * done. Running attempts get the shutdown grace to end on their own.
   * `reason` is what the shutdown events say ("SIGTERM"). Idempotent.
   */
  stop(reason?: string): void {
    if (!this.stopping && reason !== undefined) this.stopReason = reason;
    this.stopping = true;
    this.wake();
  }

  /** WORKER-3 without the grace: stop claiming, and stop running attempts at once (SIGTERM, then SIGKILL after their kill_grace_ms). */
  stopNow(): void {
    this.stopping = true;
    this.graceEnded = true;
    this.endGrace?.();
    this.wake();
  }

  /**
   * Runs until stop() (serve) or until done (drain, once), then shuts down
   * cleanly. Rejects with NOT_A_QUEUE when a served queue was removed or
   * replaced underneath it (after stopping what ran there).
   */
  async run(): Promise<WorkerSummary> {
    if (this.started) throw new FsjobError('USAGE', 'a Worker runs once; create a new one');
    this.started = true;
    const user = this.options.onEvent;
    this.ctx = await makeContext({ ...this.options, onEvent: (event) => this.tally(event, user) }, this.id);
    const ctx = this.ctx;
    this.startedMs = ctx.clock.nowMs();
    const hooks = { wake: () => this.wake(), free: () => this.inFlight.size < this.concurrency, stopping: () => this.stopping };
    const serving = this.mode === 'serve' ? { workerId: this.id, clock: ctx.clock } : undefined;
    for (const root of this.options.queues) {
      const queue = await openServed(root, ctx);
      const view = new ReadyView(queue);
      this.slots.push({ queue, paused: false, view, member: new PoolMember(queue, view, serving, hooks) });
    }
    try {
      // WORKER-2: the guardian runs before any command may start, and so does the spawner.
      if (this.guardian !== undefined && this.spawner !== undefined) {
        this.commands = new CommandSupport(this.guardian, this.spawner, ctx, () => this.slots[0]?.queue.root ?? '');
        await this.commands.start();
      }
      for (const slot of this.slots) {
        await rebuildReady(ctx, slot.queue); // READY-4
        await this.register(slot);
        slot.member.start();
      }
      this.registrationTimer = setInterval(() => void this.renewRegistrations(), renewInterval(ctx.leaseMs));
      this.registrationTimer.unref();
      await this.loop(ctx);
    } finally {
      await this.shutdown();
    }
    if (this.fatal !== undefined) throw this.fatal;
    return this.summary;
  }

  private tally(event: ConsumerEvent, user: ((event: ConsumerEvent) => void) | undefined): void {
    tally(this.summary, event);
    // READY-2 removed its entry.
    if (event.type === 'finished') for (const slot of this.slots) if (slot.queue.root === event.queue) slot.view.finished(event.job_id);
    user?.(event);
  }

  private commandsAllowed(): boolean {
    return this.commands !== undefined && this.commands.ready && !this.stopping;
  }

  private filterFor(slot: QueueSlot, ctx: Context): SelectFilter {
    return {
      skip: (id) => this.inFlight.has(key(slot, id)) || (this.avoidUntil.get(key(slot, id)) ?? -Infinity) > monotonicMs(ctx.clock),
      canRun: (spec) => (spec.argv !== undefined ? this.commandsAllowed() : spec.handler !== undefined && this.handlers.has(spec.handler)),
    };
  }

  private readonly policy: ClaimPolicy = { purpose: 'run', hasHandler: (name) => this.handlers.has(name) };

  private async loop(ctx: Context): Promise<void> {
    let claims = 0;
    let relisted = false; // see relistBeforeEnd
    for (;;) {
      if (this.stopping) return;
      if (!this.stopping) await this.commands?.ensure();
      const roundMs = performance.now();
      let claimedNow = 0;
      let retryAtMs: number | null = null;
      let watchMs: number | null = null;
      let scanError: FsjobError | undefined;
      let notBeforeMs: number | null = null;
      let claimingMs: number | null = null;
      const exhausted = new Set<number>();
      while (!this.stopping && this.inFlight.size < this.concurrency && !(this.mode === 'once' && claims >= 1) && exhausted.size < this.slots.length) {
        const index = this.nextQueue % this.slots.length;
        this.nextQueue = (index + 1) % this.slots.length;
        if (exhausted.has(index)) continue;
        const slot = this.slots[index] as QueueSlot;
        let selected;
        await slot.member.update();
        // A scan is an operation of its own (flush.ts): its claim's fsyncs run inline only when no job runs beside it.
        const scanning = beginOperation();
        try {
          selected = await claimNextIn(ctx, slot.queue, this.filterFor(slot, ctx), this.policy, (id, ms) => this.avoid(slot, id, ms), slot.view, slot.member.look());
        } catch (error) {
          scanError = error instanceof FsjobError ? error : new FsjobError('IO', String(error));
          ctx.emit({ type: 'error', queue: slot.queue.root, job_id: null, error: scanError });
          const gone = await this.abandoned(slot, ctx);
          if (gone !== undefined) {
            this.lostRoots.add(slot.queue.root);
            this.abandon(gone);
            return;
          }
          exhausted.add(index);
          continue;
        } finally {
          scanning();
        }
        this.summary.scans += 1;
        this.summary.raced += selected.raced;
        this.notePause(slot, selected.paused, ctx);
        if (selected.retryAtMs !== null) retryAtMs = retryAtMs === null ? selected.retryAtMs : Math.min(retryAtMs, selected.retryAtMs);
        if (selected.watchMs !== null) watchMs = watchMs === null ? selected.watchMs : Math.min(watchMs, selected.watchMs);
        if (selected.notBeforeMs !== null) notBeforeMs = notBeforeMs === null ? selected.notBeforeMs : Math.min(notBeforeMs, selected.notBeforeMs);
        if (selected.claimingMs !== null) claimingMs = claimingMs === null ? selected.claimingMs : Math.min(claimingMs, selected.claimingMs);
        if (selected.result === null) {
          exhausted.add(index);
          continue;
        }
        claims += 1;
        claimedNow += 1;
        relisted = false;
        if (selected.result.kind === 'run') this.launch(slot, selected.result.ticket);
      }
      this.scans.turn(scanError !== undefined, monotonicMs(ctx.clock));
      for (const slot of this.slots) slot.member.polled(claimedNow > 0);
      if (this.mode !== 'serve') {
        if (this.mode === 'once' && claims >= 1 && this.inFlight.size === 0) return;
        if (this.inFlight.size === 0 && claimedNow === 0 && scanError !== undefined) {
          // A queue that could not be scanned is not drained: try again, then give up with the error.
          if (this.scans.exhausted(monotonicMs(ctx.clock))) {
            this.fatal ??= scanError;
            return;
          }
          await this.sleep(this.scans.pause(this.pollMs));
          continue;
        }
        if (this.inFlight.size === 0 && claimedNow === 0) {
          if (!relisted && (relisted = relistBeforeEnd(this.slots.map((slot) => slot.view), roundMs))) continue;
          // Idle: only retries and starts due within CONSUME_RETRY_WAIT, and watched claims (LEASE-3), bring work (MANIFEST-4, PAUSE-1).
          const now = ctx.clock.nowMs();
          const near = (at: number | null): number | null => (at !== null && at - now <= CONSUME_RETRY_WAIT ? at - now : null);
          const waits = [near(retryAtMs), near(notBeforeMs), watchMs, claimingMs].filter((ms): ms is number => ms !== null);
          if (waits.length === 0) return;
          await this.sleep(Math.max(10, Math.min(Math.min(...waits) + 5, this.pollMs)));
          continue;
        }
      }
      if (claimedNow > 0 && this.inFlight.size < this.concurrency) continue;
      // Another consumer's claim in flight (select.ts): look again when it has likely been linked.
      const idleMs = this.scans.pause(idlePollMs(this.slots.map((slot) => slot.member), this.pollMs));
      await this.sleep(claimingMs === null ? idleMs : Math.min(idleMs, claimingMs));
    }
  }

  /**
   * WORKER-4, seed 000's abandoned-root check: the queue this worker opened
   * is no longer at its root (removed, or replaced by another queue). Nothing is
   * recreated there (LAYOUT-2: no queue without fsjob.json). Other failures
   * (EIO, EMFILE) may pass and are retried at the next turn.
   */
  private async abandoned(slot: QueueSlot, ctx: Context): Promise<FsjobError | undefined> {
    const { root } = slot.queue;
    try {
      const now = await openWith(root, ctx);
      if (now.record.queue_id === slot.queue.record.queue_id) return undefined;
      return new FsjobError('NOT_A_QUEUE', `${root} now holds another queue (queue_id ${now.record.queue_id}, was ${slot.queue.record.queue_id}); stopping the worker of the removed queue`, {
        path: root,
        clause: 'WORKER-4',
      });
    } catch (error) {
      if (!(error instanceof FsjobError) || (error.code !== 'NOT_A_QUEUE' && error.code !== 'NOT_FOUND')) return undefined;
      return new FsjobError('NOT_A_QUEUE', `the queue ${root} was removed while this worker served it (${error.message}); stopping the abandoned worker`, {
        path: root,
        clause: 'WORKER-4',
        cause: error,
      });
    }
  }

  /** Stop at once: what runs can publish nothing in a removed queue, so no grace is waited; run() rejects with `error`. */
  private abandon(error: FsjobError): void {
    this.fatal ??= error;
    this.stopping = true;
    for (const entry of this.inFlight.values()) entry.job.stop('shutdown');
  }

  private launch(slot: QueueSlot, ticket: RunTicket): void {
    const ctx = this.ctx as Context;
    const k = key(slot, ticket.owner.id);
    let job: RunningJob;
    // Each running job is an operation (flush.ts) until it ends.
    const running = beginOperation();
    if (ticket.spec.argv !== undefined) job = runCommand(ticket, { guardian: this.guardian, launcher: this.commands?.launcher });
    else job = runPayload(ticket, this.handlers.get(ticket.spec.handler ?? '') as Handler);
    this.inFlight.set(k, { slot, job });
    const left = (reason: string): void => ctx.emit({ type: 'left', queue: slot.queue.root, job_id: ticket.owner.id, gen: ticket.owner.gen, reason });
    job.done
      .then((outcome: RunOutcome) => {
        if (outcome.kind === 'aborted') {
          ctx.emit({ type: 'error', queue: slot.queue.root, job_id: ticket.owner.id, error: outcome.error });
          if (outcome.open) left(`its attempt could not start and the generation could not be given back: ${outcome.error.message}`);
          const count = (this.failures.get(k) ?? 0) + 1;
          this.failures.set(k, count);
          // The end record's retry_at_ms spaces the next tries; after FAILURE_LIMIT of them the job is left alone.
          if (count >= FAILURE_LIMIT) this.avoid(slot, ticket.owner.id, FAILURE_PAUSE);
        } else {
          if (outcome.kind === 'unproven') left(outcome.reason);
          this.failures.delete(k);
        }
      })
      .catch((error: unknown) => {
        const failure = error instanceof FsjobError ? error : new FsjobError('IO', String(error));
        ctx.emit({ type: 'error', queue: slot.queue.root, job_id: ticket.owner.id, error: failure });
        // A job directory that is gone holds no claim to leave open.
        const gone = failure.code === 'NOT_FOUND' || failure.errno === 'ENOENT' || failure.errno === 'ENOTDIR';
        if (!gone) left(`its outcome could not be published: ${failure.message}`);
        this.avoid(slot, ticket.owner.id, FAILURE_PAUSE);
      })
      .finally(() => {
        running();
        ticket.owner.close();
        this.inFlight.delete(k);
        this.wake();
      });
  }

  /** PAUSE-1: say once when a served queue is paused, and once when it is resumed. */
  private notePause(slot: QueueSlot, paused: boolean, ctx: Context): void {
    if (paused === slot.paused) return;
    slot.paused = paused;
    ctx.emit(paused ? { type: 'paused', queue: slot.queue.root } : { type: 'resumed', queue: slot.queue.root });
  }

  private avoid(slot: QueueSlot, id: string, ms: number): void {
    this.avoidUntil.set(key(slot, id), monotonicMs((this.ctx as Context).clock) + ms);
  }

  private sleep(ms: number): Promise<void> {
    // An event that arrived while the loop was busy scanning is not lost.
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakers.add(done);
    });
  }

  private wake(): void {
    if (this.wakers.size === 0) this.woken = true;
    for (const waker of [...this.wakers]) waker();
  }

  /** WORKER-1: publish workers/<w>.json by rename; then this worker's rank in the pool (pool.ts). */
  private async register(slot: QueueSlot): Promise<void> {
    const ctx = this.ctx as Context;
    const jobs = [...this.inFlight.values()].filter((entry) => entry.slot === slot).map((entry) => ({ job_id: entry.job.owner.id, gen: entry.job.owner.gen }));
    const mode = this.stopping ? 'stopping' : this.mode === 'serve' ? 'serving' : 'draining';
    await publishRegistration(slot.queue, ctx, { workerId: this.id, startedMs: this.startedMs, concurrency: this.concurrency, mode, jobs, handlers: [...this.handlers.keys()] });
    await slot.member.update(true);
  }

  private async renewRegistrations(): Promise<void> {
    for (const slot of this.slots) {
      if (this.lostRoots.has(slot.queue.root)) continue; // WORKER-4: nothing is written there
      // WORKER-4 at each renewal, also while every slot is busy (a scan only
      // looks when it fails): a root that now holds another queue gets nothing
      // of this worker, not even the registration.
      if (!this.stopping && this.ctx !== undefined) {
        const gone = await this.abandoned(slot, this.ctx);
        if (gone !== undefined) {
          this.lostRoots.add(slot.queue.root);
          this.abandon(gone);
          this.wake();
          return;
        }
      }
      try {
        await this.register(slot);
      } catch (error) {
        this.ctx?.emit({ type: 'error', queue: slot.queue.root, job_id: null, error: error instanceof FsjobError ? error : new FsjobError('IO', String(error)) });
      }
    }
  }

  /** WORKER-3, and the clean exit of drain and once. */
  private async shutdown(): Promise<void> {
    this.stopping = true;
    clearInterval(this.registrationTimer);
    for (const slot of this.slots) slot.member.close();
    const ctx = this.ctx as Context;
    if (this.inFlight.size > 0) {
      await this.renewRegistrations(); // mode "stopping"
      const all = (): Promise<unknown> => Promise.allSettled([...this.inFlight.values()].map((entry) => entry.job.done));
      const graceMs = this.graceEnded || this.fatal !== undefined ? 0 : ctx.shutdownGraceMs;
      ctx.emit({ type: 'shutdown', phase: 'draining', reason: this.stopReason, running: this.inFlight.size, grace_ms: graceMs });
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => {
        this.endGrace = resolve;
        // An unbounded grace (Infinity) waits for the attempts alone; setTimeout cannot take it.
        if (Number.isFinite(graceMs)) timer = setTimeout(resolve, graceMs);
      });
      await Promise.race([all(), grace]);
      clearTimeout(timer);
      this.endGrace = undefined;
      if (this.inFlight.size > 0) {
        ctx.emit({ type: 'shutdown', phase: 'stopping', reason: this.graceEnded ? `${this.stopReason}, then asked again` : `${this.stopReason}, and the grace ran out`, running: this.inFlight.size, grace_ms: graceMs });
        for (const entry of this.inFlight.values()) entry.job.stop('shutdown');
      }
      await all();
    }
    for (const slot of this.slots) {
      if (this.lostRoots.has(slot.queue.root)) continue; // WORKER-4: another queue's, or none
      await removeTree(slot.queue.paths.worker(this.id), slot.queue.fsOptions).catch(() => undefined);
    }
    await this.commands?.close();
  }
}

function key(slot: QueueSlot, id: string): string {
  return `${slot.queue.root}\0${id}`;
}
