/**
 * The long-running consumer (spec/workers.md): N slots over one or more queues.
 *
 * - Queues are served round-robin, one claim per turn, so a busy queue cannot
 *   starve the others (seed 004's capacity and round-robin). The claims for
 *   several free slots are in flight at once (claims-in-flight.ts).
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
import { describe } from '../base/option-checks.ts';
import type { Queue } from '../model/queue.ts';
import { beginOperation, removeTree } from '../fs/safefs.ts';
import type { ClaimPolicy, RunTicket } from './claim.ts';
import { makeContext, newWorkerId, openServed, type ConsumerEvent, type Context } from './context.ts';
import { Guardian } from './guardian.ts';
import { Spawner } from './spawner.ts';
import { CommandSupport } from './command-support.ts';
import { runCommand, type RunningJob, type RunOutcome } from './run.ts';
import { runPayload, type Handler } from './payload.ts';
import { ReadyView, relistBeforeEnd } from './ready-view.ts';
import { claimNextIn, rebuildReady, type ClaimOutcome, type ClaimPipeline, type SelectFilter, type SelectResult } from './select.ts';
import { claimKey, ClaimsInFlight } from './claims-in-flight.ts';
import { ScanBackoff } from './scan-backoff.ts';
import { PoolMember, idlePollMs } from './pool.ts';
import { LoopWake } from './loop-wake.ts';
import { queueGone } from './queue-gone.ts';
import { publishRegistration } from './registration.ts';
import { newSummary, tally, type WorkerSummary } from './summary.ts';
import { CALLER, checkWorkerOptions, type WorkerMode, type WorkerOptions } from './worker-options.ts';

export type { WorkerSummary } from './summary.ts';
export type { WorkerMode, WorkerOptions } from './worker-options.ts';

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

/** After this many attempts of one job that could not start, leave it for FAILURE_PAUSE. */
const FAILURE_LIMIT = 3;
const FAILURE_PAUSE = 600_000;

/**
 * A long-running consumer (spec/workers.md): registers itself (WORKER-1), starts
 * a guardian (WORKER-2), claims jobs from its queues round-robin and runs up
 * to `concurrency` at once, command jobs as process groups and payload jobs
 * through the handlers given to `handle()`, and publishes exactly one receipt
 * per job. `run()` resolves with a summary when the mode says it is done;
 * `stop()` ends it gracefully (WORKER-3), `stopNow()` at once. The options
 * are checked here: a wrong one throws USAGE with the option as `field`.
 *
 *   const worker = new Worker({ queues: ['/srv/q'], concurrency: 4, onEvent: (e) => log(e) });
 *   worker.handle('resize', async ({ payload, signal }) => resize(payload, signal));
 *   process.once('SIGTERM', () => {
 *     worker.stop('SIGTERM');                            // no new claims; running jobs get shutdownGraceMs
 *     process.once('SIGTERM', () => worker.stopNow());   // a second one stops them at once
 *   });
 *   const summary = await worker.run();                  // resolves once the running jobs ended
 *
 * After `run()` settles the Worker holds no timer, watcher or child process
 * (the guardian and the spawner have exited): a program with nothing else to
 * do exits.
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
  /** Claims started and not yet handled (concurrency > 1: claims-in-flight.ts); each holds a slot. */
  private readonly claiming = new ClaimsInFlight();
  /** Claims that came to a job (run or decided): all of them, and in the current round. */
  private claims = 0;
  private claimedNow = 0;
  private readonly avoidUntil = new Map<string, number>(); // until a monotonic instant: a wall clock that goes back must not lengthen the pause (LEASE-4)
  private readonly failures = new Map<string, number>();
  private readonly wakeup = new LoopWake();
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
  private started = false;
  private nextQueue = 0;
  private startedMs = 0;
  private registrationTimer: NodeJS.Timeout | undefined;
  private readonly summary: WorkerSummary;
  private readonly scans = new ScanBackoff();

  constructor(options: WorkerOptions) {
    checkWorkerOptions(options);
    const concurrency = options.concurrency ?? 1;
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
    if (typeof name !== 'string' || !/^[a-z0-9][a-z0-9._-]{0,63}$/.test(name)) {
      throw new FsjobError('USAGE', `handler name ${typeof name === 'string' ? JSON.stringify(name) : describe(name)} does not match ^[a-z0-9][a-z0-9._-]{0,63}$ (SPEC-1)`, { clause: 'SPEC-1' });
    }
    if (typeof handler !== 'function') throw new FsjobError('USAGE', `the handler of ${JSON.stringify(name)} must be a function, not ${describe(handler)}`);
    this.handlers.set(name, handler);
    return this;
  }

  /**
   * WORKER-3: stop claiming and shut down gracefully; run() resolves when
   * done. Running attempts get the shutdown grace to end on their own.
   * `reason` is what the shutdown events say ("SIGTERM"). Idempotent.
   */
  stop(reason?: string): void {
    if (reason !== undefined && typeof reason !== 'string') throw new FsjobError('USAGE', `Worker.stop(reason): the reason must be a string ("SIGTERM"), not ${describe(reason)}`);
    if (!this.stopping && reason !== undefined) this.stopReason = reason;
    this.stopping = true;
    this.wakeup.wake();
  }

  /** WORKER-3 without the grace: stop claiming, and stop running attempts at once (SIGTERM, then SIGKILL after their kill_grace_ms). */
  stopNow(): void {
    this.stopping = true;
    this.graceEnded = true;
    this.endGrace?.();
    this.wakeup.wake();
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
    this.ctx = await makeContext({ ...this.options, onEvent: (event) => this.tally(event, user) }, this.id, CALLER);
    const ctx = this.ctx;
    this.startedMs = ctx.clock.nowMs();
    const hooks = { wake: () => this.wakeup.wake(), free: () => this.busy() < this.concurrency, stopping: () => this.stopping };
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

  /** Counts the event, then hands it to the user's listener; what that returns (a promise of an async one) goes back to the context's emit, which catches it. */
  private tally(event: ConsumerEvent, user: ((event: ConsumerEvent) => unknown) | undefined): unknown {
    tally(this.summary, event);
    // READY-2 removed its entry.
    if (event.type === 'finished') for (const slot of this.slots) if (slot.queue.root === event.queue) slot.view.finished(event.job_id);
    return user?.(event);
  }

  private filterFor(slot: QueueSlot, ctx: Context): SelectFilter {
    return {
      skip: (id) => {
        const k = key(slot, id);
        return this.inFlight.has(k) || this.claiming.has(k) || (this.avoidUntil.get(k) ?? -Infinity) > monotonicMs(ctx.clock);
      },
      canRun: (spec) => (spec.argv !== undefined ? this.commands?.ready === true && !this.stopping : spec.handler !== undefined && this.handlers.has(spec.handler)),
    };
  }

  private readonly policy: ClaimPolicy = { purpose: 'run', hasHandler: (name) => this.handlers.has(name) };

  /** Slots taken: jobs running and claims in flight (CLAIM-8). */
  private busy(): number {
    return this.inFlight.size + this.claiming.size;
  }

  /** A claim came to a job: count it, and run the job. */
  private claimed(slot: QueueSlot, result: NonNullable<SelectResult['result']>): void {
    this.claims += 1;
    this.claimedNow += 1;
    if (result.kind === 'run') this.launch(slot, result.ticket);
  }

  /** Where a claim in flight ends (claims-in-flight.ts): as the walk would have handled it, then the loop looks again. */
  private pipelineFor(slot: QueueSlot): ClaimPipeline {
    return this.claiming.pipeline(slot.queue.root, (outcome: ClaimOutcome) => {
      try {
        if (outcome.raced) this.summary.raced += 1;
        if (outcome.result !== null) this.claimed(slot, outcome.result);
      } catch (error) {
        // launch() does not throw; were it to, the worker stops with the error rather than lose the job silently.
        this.fatal ??= error instanceof FsjobError ? error : new FsjobError('IO', String(error));
        this.stopping = true;
      }
      this.wakeup.wake();
    }, () => this.busy());
  }

  private async loop(ctx: Context): Promise<void> {
    let relisted = false; // see relistBeforeEnd
    // Made once per run, not per round or scan: a Worker runs once, and its slots are fixed by then.
    const filters = this.slots.map((slot) => this.filterFor(slot, ctx));
    const avoids = this.slots.map((slot) => (id: string, ms: number) => this.avoid(slot, id, ms));
    const members = this.slots.map((slot) => slot.member);
    const views = this.slots.map((slot) => slot.view);
    // Concurrency 1 claims one job at a time, as ever (its fsyncs inline: flush.ts).
    const pipelines = this.slots.map((slot) => (this.concurrency > 1 ? this.pipelineFor(slot) : undefined));
    const exhausted = new Set<number>();
    for (;;) {
      if (this.stopping) return;
      if (!this.stopping && this.commands !== undefined) await this.commands.ensure(); // no await of nothing: a promise a job
      const roundMs = performance.now();
      this.claimedNow = 0;
      let retryAtMs: number | null = null;
      let watchMs: number | null = null;
      let scanError: FsjobError | undefined;
      let notBeforeMs: number | null = null;
      let claimingMs: number | null = null;
      exhausted.clear();
      // A round walks until every free slot has a job or a claim in flight, or no queue has more; it ends when its claims were handled.
      for (;;) {
        while (!this.stopping && this.busy() < this.concurrency && !(this.mode === 'once' && this.claims + this.claiming.size >= 1) && exhausted.size < this.slots.length) {
          const index = this.nextQueue % this.slots.length;
          this.nextQueue = (index + 1) % this.slots.length;
          if (exhausted.has(index)) continue;
          const slot = this.slots[index] as QueueSlot;
          let selected;
          if (slot.member.due()) await slot.member.update();
          // A scan is an operation of its own (flush.ts): its claim's fsyncs run inline only when no job runs beside it.
          const scanning = beginOperation();
          try {
            selected = await claimNextIn(ctx, slot.queue, filters[index] as SelectFilter, this.policy, avoids[index] as (id: string, ms: number) => void, slot.view, slot.member.look(), pipelines[index]);
          } catch (error) {
            scanError = error instanceof FsjobError ? error : new FsjobError('IO', String(error));
            ctx.emit({ type: 'error', queue: slot.queue.root, job_id: null, error: scanError });
            const gone = await queueGone(slot.queue, ctx);
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
          if (selected.started) continue; // claimed in flight; on to the next free slot
          if (selected.result === null) {
            exhausted.add(index);
            continue;
          }
          this.claimed(slot, selected.result);
        }
        if (this.claiming.size === 0) break;
        await this.wakeup.next(); // a claim was handled, a job ended, or stop()
      }
      if (this.claimedNow > 0) relisted = false;
      this.scans.turn(scanError !== undefined, monotonicMs(ctx.clock));
      for (const slot of this.slots) slot.member.polled(this.claimedNow > 0);
      if (this.mode !== 'serve') {
        if (this.mode === 'once' && this.claims >= 1 && this.inFlight.size === 0) return;
        if (this.inFlight.size === 0 && this.claimedNow === 0 && scanError !== undefined) {
          // A queue that could not be scanned is not drained: try again, then give up with the error.
          if (this.scans.exhausted(monotonicMs(ctx.clock))) {
            this.fatal ??= scanError;
            return;
          }
          await this.wakeup.sleep(this.scans.pause(this.pollMs));
          continue;
        }
        if (this.inFlight.size === 0 && this.claimedNow === 0) {
          if (!relisted && (relisted = relistBeforeEnd(views, roundMs))) continue;
          // Idle: only retries and starts due within CONSUME_RETRY_WAIT, and watched claims (LEASE-3), bring work (MANIFEST-4, PAUSE-1).
          const now = ctx.clock.nowMs();
          const near = (at: number | null): number | null => (at !== null && at - now <= CONSUME_RETRY_WAIT ? at - now : null);
          const waits = [near(retryAtMs), near(notBeforeMs), watchMs, claimingMs].filter((ms): ms is number => ms !== null);
          if (waits.length === 0) return;
          await this.wakeup.sleep(Math.max(10, Math.min(Math.min(...waits) + 5, this.pollMs)));
          continue;
        }
      }
      if (this.claimedNow > 0 && this.busy() < this.concurrency) continue;
      // Another consumer's claim in flight (select.ts): look again when it has likely been linked. A payload-only worker with every slot running waits for a job's end (or stop, abandon: each wakes it), with no timer per job.
      const idleMs = this.scans.pause(idlePollMs(members, this.pollMs));
      const allBusy = this.commands === undefined && this.claiming.size === 0 && this.inFlight.size >= this.concurrency;
      await (allBusy ? this.wakeup.next() : this.wakeup.sleep(claimingMs === null ? idleMs : Math.min(idleMs, claimingMs)));
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
    void (async (): Promise<void> => { // the job's end, as then, catch and finally would take it, with one promise instead of three
      try {
        const outcome: RunOutcome = await job.done;
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
      } catch (error) {
        const failure = error instanceof FsjobError ? error : new FsjobError('IO', String(error));
        ctx.emit({ type: 'error', queue: slot.queue.root, job_id: ticket.owner.id, error: failure });
        // A job directory that is gone holds no claim to leave open.
        const gone = failure.code === 'NOT_FOUND' || failure.errno === 'ENOENT' || failure.errno === 'ENOTDIR';
        if (!gone) left(`its outcome could not be published: ${failure.message}`);
        this.avoid(slot, ticket.owner.id, FAILURE_PAUSE);
      } finally {
        running();
        ticket.owner.close();
        this.inFlight.delete(k);
        this.wakeup.wake();
      }
    })();
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
        const gone = await queueGone(slot.queue, this.ctx);
        if (gone !== undefined) {
          this.lostRoots.add(slot.queue.root);
          this.abandon(gone);
          this.wakeup.wake();
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
    await this.claiming.all(); // their jobs run now, and are stopped as the others
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
  return claimKey(slot.queue.root, id);
}
