/**
 * Running a payload job (PAYLOAD-1): the handler runs in the consumer's own
 * process, so its execution is recorded with group null and stopped exactly
 * when the owner is; there are no output files. `ClaimedJob` is the job as
 * claimNext() hands it out (the caller runs it and ends it with complete(),
 * fail() or release()); `runPayload` is how a Worker runs one with a
 * registered handler. Both end the generation through run.ts's `conclude`
 * (section 8.8, RETRY-3), as a command does.
 */
import { CANCEL_GRACE } from '../base/constants.ts';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { catchSoon, thenSoon, type Soon } from '../base/soon.ts';
import { clipUtf8 } from '../base/text.ts';
import { checkFreeJson } from '../records/json-write.ts';
import { describe } from '../base/option-checks.ts';
import type { JsonValue, SpecRecord } from '../records/codec.ts';
import type { RunTicket } from './claim.ts';
import type { StopReason } from './command.ts';
import { ControlLoop } from './control.ts';
import { leaseWindow } from './finishing.ts';
import type { Ownership } from './owner.ts';
import { concludeSoon, giveBack, superseded, type Ending, type RunningJob, type RunOutcome } from './run.ts';

/** What a payload handler gets (PAYLOAD-1). */
export interface HandlerContext {
  readonly jobId: string;
  readonly queue: string;
  readonly spec: SpecRecord;
  readonly payload: JsonValue;
  readonly attempt: number;
  /** Aborted on cancel, timeout, ownership loss, preemption and shutdown; `signal.reason` says which. */
  readonly signal: AbortSignal;
  /** Renew the lease now and report progress (at most 1024 bytes) in state.<g>.json. */
  heartbeat(progress?: string | null): Promise<void>;
}

/**
 * A payload handler (PAYLOAD-1): returns or resolves to the result, or throws
 * (rejects) to fail the attempt (the receipt's message says what it threw).
 * The result is JSON data as it is: null, a boolean, a finite number, a
 * string, or arrays and plain objects of them (undefined is null; a member
 * whose value is undefined is left out), at most 262144 bytes serialized.
 * Anything else (a Date, a Map, NaN, a bigint, a function, a cycle) fails the
 * attempt with a message that says where, rather than being changed on the
 * way. A handler that never settles is stopped by the job's timeout_ms
 * (EXEC-8): its signal aborts, and after kill_grace_ms the attempt ends
 * timed out whether or not it settled. Registered with `Worker.handle`.
 */
export type Handler = (ctx: HandlerContext) => unknown;

const RESULT_MAX_BYTES = 262_144;

/**
 * A claimed payload job (PAYLOAD-1) whose execution is recorded: exec.<g>.json
 * with group null is published before it is handed out, so the attempt
 * counts. A control loop renews the lease and aborts `signal` on cancel,
 * timeout, ownership loss and preemption. End it with exactly one of
 * complete(), fail() or release().
 */
export class ClaimedJob {
  readonly id: string;
  readonly gen: number;
  readonly spec: SpecRecord;
  readonly payload: JsonValue;
  readonly attempt: number;
  readonly queue: string;
  readonly owner: Ownership;
  /** Made when the handler first asks for its signal: most jobs end without one, and it costs a few µs to make. */
  private controller: AbortController | undefined;
  /** Called once when the job is asked to stop (runPayload races the handler against it). */
  private stopped: (() => void) | undefined;
  private readonly control: ControlLoop;
  private timer: NodeJS.Timeout | undefined;
  private reason: StopReason | null = null;
  private progressText: string | null = null;
  private startedMs: number | null = null;
  /** performance.now() when the execution was recorded: EXEC-8's timeout counts from there, also when its timer starts later (watch). */
  private startedReal = 0;
  private settled = false;
  /** Called once the job's end is published (or failed to be): what the caller of claimNext() holds for it. */
  private readonly ends: (() => void)[] = [];

  private constructor(ticket: RunTicket) {
    this.owner = ticket.owner;
    this.id = ticket.owner.id;
    this.gen = ticket.owner.gen;
    this.spec = ticket.spec;
    this.payload = ticket.spec.payload ?? null;
    this.attempt = ticket.attemptsUsed + 1;
    this.queue = ticket.owner.queue.root;
    this.control = new ControlLoop(this.owner, {
      spec: this.spec,
      attempt: this.attempt,
      phase: () => (this.reason === null ? 'running' : 'stopping'),
      bytes: () => ({ stdout: 0, stderr: 0 }),
      progress: () => this.progressText,
      stop: (reason) => this.stop(reason),
    });
  }

  /**
   * Records the execution (EXEC-3 with group null; no output files, PAYLOAD-1) and starts the control
   * loop and EXEC-8's timer, unless `watch` is false: then the caller starts them (watch()) once the
   * job can be asked anything, which a handler that returns at once never gives a timer the turn to do.
   */
  static async start(ticket: RunTicket, watch = true): Promise<ClaimedJob> {
    return await ClaimedJob.startSoon(ticket, watch);
  }

  /** start(), done before it returns where the exec record's publish is (model/generation.ts, publishExecSoon), else its promise. */
  static startSoon(ticket: RunTicket, watch = true): Soon<ClaimedJob> {
    const job = new ClaimedJob(ticket);
    return thenSoon(job.owner.publishExecSoon(job.attempt, null), () => job.started(watch));
  }

  /** The execution is recorded (EXEC-3): the start instant, the `started` event, and the watch unless the caller starts it. */
  private started(watch: boolean): ClaimedJob {
    this.startedMs = this.owner.writeTimeMs();
    this.startedReal = performance.now();
    this.owner.ctx.emit({ type: 'started', queue: this.queue, job_id: this.id, gen: this.gen, attempt: this.attempt });
    if (watch) this.watch();
    return this;
  }

  /** Starts the control loop and EXEC-8's timer (timeout_ms from the execution's start); once, and never after the job settled. */
  watch(): void {
    if (this.settled || this.timer !== undefined) return;
    this.control.start();
    this.timer = setTimeout(() => this.stop('timeout'), Math.max(0, this.spec.timeout_ms - (performance.now() - this.startedReal))); // EXEC-8
    this.timer.unref();
  }

  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.reason !== null && !this.controller.signal.aborted) this.controller.abort(this.reason);
    return this.controller.signal;
  }

  /** Resolves when the job is asked to stop (its signal aborts then too). */
  whenStopped(): Promise<void> {
    if (this.reason !== null) return Promise.resolve();
    return new Promise((resolve) => (this.stopped = resolve));
  }

  /** Why the job was asked to stop, or null. */
  get stopReason(): StopReason | null {
    return this.reason;
  }

  /** Abort the handler; a stronger reason (force, superseded) replaces a weaker one. */
  stop(reason: StopReason): void {
    const strong = (r: StopReason | null): boolean => r === 'force' || r === 'superseded';
    if (this.reason !== null && (strong(this.reason) || !strong(reason))) return;
    this.reason = reason;
    if (this.controller !== undefined && !this.controller.signal.aborted) this.controller.abort(reason);
    this.stopped?.();
    this.stopped = undefined;
  }

  /** LEASE-1: renew now, with optional progress for state.<g>.json. */
  async heartbeat(progress?: string | null): Promise<void> {
    if (progress !== undefined && progress !== null && typeof progress !== 'string') {
      throw new FsjobError('USAGE', `heartbeat(progress): the progress must be text or null, not ${describe(progress)}`, { jobId: this.id });
    }
    if (progress !== undefined) this.progressText = progress === null ? null : clipUtf8(progress);
    await this.control.renew();
  }

  private settle(): void {
    if (this.settled) throw new FsjobError('USAGE', `job ${this.id} was already completed, failed or released`);
    this.settled = true;
    this.control.stop();
    this.control.settle(); // LEASE-6: a handler that ran past a lapsed lease is a counted failure
    clearTimeout(this.timer);
  }

  private ending(ok: boolean, message: string | null, result?: JsonValue): Ending {
    return {
      stoppedBy: this.control.fenced ? 'fenced' : this.reason,
      released: true,
      ok,
      failCode: 1,
      status: this.reason === null || ok ? { exit: ok ? 0 : 1, signal: null } : null,
      startedMs: this.startedMs,
      stdout: null,
      stderr: null,
      message,
      ...(result === undefined ? {} : { result }),
    };
  }

  /** `end` runs once the job's end is published or refused (claimNext: the operation and the job directory's handle). */
  onEnd(end: () => void): void {
    this.ends.push(end);
  }

  private ended(): void {
    for (const end of this.ends.splice(0)) end();
  }

  /** The job's end published (run.ts, concludeSoon), now or later; `ended` runs once it is, or was refused. */
  private finishSoon(ending: Ending): Soon<RunOutcome> {
    let outcome: Soon<RunOutcome>;
    try {
      if (this.control.superseded || (this.reason === 'superseded' && !this.control.fenced)) throw this.supersededError();
      outcome = concludeSoon(this.owner, this.spec, this.attempt, ending, leaseWindow(this.owner, () => this.reason === 'shutdown'));
    } catch (error) {
      this.ended();
      throw error;
    }
    if (outcome instanceof Promise) return outcome.then(this.concluded, (error: unknown) => this.concluded(undefined, error));
    return this.concluded(outcome);
  }

  /** finishSoon's end: `ended`, then the outcome, or SUPERSEDED (OWN-1), or the refusal `error`. */
  private readonly concluded = (outcome: RunOutcome | undefined, error?: unknown): RunOutcome => {
    this.ended();
    if (outcome === undefined) throw error;
    if (outcome.kind === 'superseded') throw this.supersededError();
    return outcome;
  };

  private supersededError(): FsjobError {
    return new FsjobError('SUPERSEDED', `claim ${this.gen} of job ${this.id} was superseded; nothing was published (OWN-1)`, { jobId: this.id, clause: 'OWN-1' });
  }

  /** The handler succeeded: receipt `succeeded` with `result` (unless the job was stopped meanwhile). */
  async complete(value: { result?: unknown } = {}): Promise<RunOutcome> {
    return await this.completeSoon(value);
  }

  /** complete(), done before it returns where the receipt's publish is, else its promise. */
  completeSoon(value: { result?: unknown } = {}): Soon<RunOutcome> {
    // A bare result (complete(42)) would otherwise succeed with result null.
    if (typeof value !== 'object' || value === null) throw new FsjobError('USAGE', `complete() takes { result }, not ${describe(value)}`, { jobId: this.id });
    this.settle();
    const result = (value.result === undefined ? null : value.result) as JsonValue;
    let size: number;
    try {
      // What the receipt's encoder would refuse (a Date, NaN, a Map, a function) fails the attempt here, with a receipt saying so, not the receipt.
      checkFreeJson(result, 'result');
      size = Buffer.byteLength(JSON.stringify(result));
    } catch (error) {
      return this.finishSoon(this.ending(false, `the handler's result is not JSON: ${error instanceof Error ? error.message : String(error)}`));
    }
    if (size > RESULT_MAX_BYTES) return this.finishSoon(this.ending(false, `the handler's result is ${size} bytes serialized, over ${RESULT_MAX_BYTES}`));
    return this.finishSoon(this.ending(true, null, result));
  }

  /** The handler failed: retried while attempts remain (RETRY-3), else receipt `failed` (exit 1). */
  async fail(error: unknown): Promise<RunOutcome> {
    return await this.failSoon(error);
  }

  /** fail(), done before it returns where the record's publish is, else its promise. */
  failSoon(error: unknown): Soon<RunOutcome> {
    this.settle();
    const message = error instanceof Error ? error.message : String(error);
    return this.finishSoon(this.ending(false, `handler failed: ${message}`));
  }

  /** Give the job back without counting this attempt (end record `released`, counted false). */
  async release(): Promise<RunOutcome> {
    this.settle();
    try {
      return { kind: 'end', end: await this.owner.publishEnd('released', false, 0, null) };
    } finally {
      this.ended();
    }
  }
}

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

/** What `await` would wait for: an object or function with a `then` method. */
function isThenable(value: unknown): boolean {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

/**
 * Runs a payload job with its handler; the handler gets the grace of its stop reason to settle after an abort.
 * The exec record is published before this returns, as a command's is; the handler is called on a later turn
 * of the microtask queue, as before (the caller records the job as running first, and sees a stop asked of it
 * meanwhile reach the job). A handler that returns or throws at once has its job ended within that turn where the
 * writes are done at once (spec/design-consumer-writes-costs.md); the rest waits as it must.
 */
export function runPayload(ticket: RunTicket, handler: Handler): RunningJob {
  let job: ClaimedJob | undefined;
  let pending: 'shutdown' | null = null;
  const run = (claimed: ClaimedJob): Soon<RunOutcome> => {
    job = claimed;
    if (pending !== null) claimed.stop(pending);
    const context: HandlerContext = {
      jobId: claimed.id,
      queue: claimed.queue,
      spec: claimed.spec,
      payload: claimed.payload,
      attempt: claimed.attempt,
      get signal() {
        return claimed.signal;
      },
      heartbeat: (progress) => claimed.heartbeat(progress),
    };
    let returned: unknown;
    let threw = false;
    try {
      returned = handler(context);
    } catch (error) {
      [returned, threw] = [error, true];
    }
    if (claimed.stopReason === null && (threw || !isThenable(returned))) {
      // A handler that returned or threw at once, nothing asked of the job meanwhile (a stop comes from a
      // timer or I/O, which cannot run in between): the race below would pick it anyway, at a few promises' cost.
      return endSoon(ticket, claimed, threw ? { ok: false, error: returned } : { ok: true, value: returned });
    }
    return awaitHandler(ticket, claimed, returned, threw);
  };
  let done: Promise<RunOutcome>;
  try {
    // No timer until the handler returned something to wait for: one that returns at once ends the job first.
    const started = ClaimedJob.startSoon(ticket, false);
    done = started instanceof Promise ? started.then(run, (error: unknown) => giveBack(ticket.owner, error)) : RESOLVED.then(() => run(started));
  } catch (error) {
    done = RESOLVED.then(() => giveBack(ticket.owner, error));
  }
  return {
    owner: ticket.owner,
    spec: ticket.spec,
    stop: (reason) => {
      if (job === undefined) pending = reason;
      else job.stop(reason);
    },
    done,
  };
}

const RESOLVED: Promise<void> = Promise.resolve();

/** A handler that returned something to wait for, or was asked to stop while it ran: its result raced against the stop and its grace. */
async function awaitHandler(ticket: RunTicket, claimed: ClaimedJob, returned: unknown, threw: boolean): Promise<RunOutcome> {
  claimed.watch();
  const settled: Promise<Settled> = (threw ? Promise.reject(returned) : Promise.resolve(returned)).then(
    (value): Settled => ({ ok: true, value }),
    (error: unknown): Settled => ({ ok: false, error }),
  );
  let outcome = await Promise.race([settled, claimed.whenStopped().then(() => null)]);
  if (outcome === null) {
    const reason = claimed.stopReason;
    const grace = reason === 'cancel' ? CANCEL_GRACE : reason === 'force' || reason === 'superseded' ? 0 : claimed.spec.kill_grace_ms;
    outcome = await Promise.race([settled, ticket.owner.ctx.clock.sleep(grace).then(() => null)]);
  }
  return await endSoon(ticket, claimed, outcome);
}

/** The job's end for what the handler came to (null: it did not settle after its abort); a superseded claim publishes nothing (OWN-1). */
function endSoon(ticket: RunTicket, claimed: ClaimedJob, outcome: Settled | null): Soon<RunOutcome> {
  return catchSoon(
    () => {
      if (outcome !== null && outcome.ok) return claimed.completeSoon({ result: outcome.value });
      return claimed.failSoon(outcome === null ? new Error(`the handler did not settle after it was aborted (${String(claimed.stopReason)})`) : outcome.error);
    },
    (error) => {
      if (isFsjobError(error, 'SUPERSEDED')) return superseded(ticket.owner);
      throw error;
    },
  );
}
