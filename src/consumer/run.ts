/**
 * Running a claimed job (spec/running.md) and ending its generation: a receipt
 * (RCPT-1..5), or an end record when the job goes back to the queue
 * (RETRY-3, PREEMPT-1, WORKER-3).
 *
 * Order for a command: stdout.<g>/stderr.<g> created exclusively (EXEC-1),
 * the group started gated, exec.<g>.json published (EXEC-3, the commit point
 * of the attempt), the gate released; a control loop renews the lease and
 * watches cancel records, ownership and preemption; when the group is proven
 * stopped and the outputs are fsynced (RCPT-1, RCPT-2), the receipt is linked
 * (RCPT-3) and the ready entry removed (READY-2). An owner that lost its claim
 * publishes nothing (OWN-1); an owner that cannot prove its group stopped
 * publishes nothing either, and says so (UNPROVEN).
 */
import { monotonicMs } from '../base/clock.ts';
import { commandArgv, commandEnv, signalExitCode } from './command-env.ts';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { catchSoon, thenSoon, type Soon } from '../base/soon.ts';
import type { EndRecord, ExecStatus, JsonValue, OutputSummary, ReceiptRecord, SpecRecord } from '../records/codec.ts';
import type { RunTicket } from './claim.ts';
import { startCommand, type CommandResult, type RunningCommand, type StopReason } from './command.ts';
import type { Context } from './context.ts';
import { ControlLoop } from './control.ts';
import type { Guardian } from './guardian.ts';
import type { Launcher } from './launch.ts';
import type { ReceiptFields } from '../model/generation.ts';
import { GIVE_BACK_DELAY, type Ownership } from './owner.ts';
import { leaseWindow, persist, persistSoon, proveStoppedLater, type FinishWindow } from './finishing.ts';
import { outputKeepOf } from '../model/output-keep.ts';
import { AttemptCgroup, outsideNote } from './cgroup.ts';

/** How a run ended, as far as the queue is concerned. */
export type RunOutcome =
  | { kind: 'receipt'; receipt: ReceiptRecord }
  | { kind: 'end'; end: EndRecord }
  /** Someone else's receipt was there first (RCPT-3): nothing published. */
  | { kind: 'exists' }
  /** The claim was superseded (CLAIM-7): nothing published (OWN-1). */
  | { kind: 'superseded' }
  /** The execution could not be proven stopped: nothing published (RECOV-1 would not break it either). */
  | { kind: 'unproven'; reason: string }
  /** The attempt could not start (I/O, guardian down); the generation was given back unless `open` (RCPT-7 gave up). */
  | { kind: 'aborted'; error: FsjobError; open: boolean };

export interface RunningJob {
  readonly owner: Ownership;
  readonly spec: SpecRecord;
  /** WORKER-3: stop the attempt because the consumer shuts down. */
  stop(reason: 'shutdown'): void;
  readonly done: Promise<RunOutcome>;
}

function asFsjobError(error: unknown): FsjobError {
  if (error instanceof FsjobError) return error;
  return new FsjobError('IO', error instanceof Error ? error.message : String(error), { cause: error });
}


/** End the generation without an execution (EXEC-3: publication failed, or the attempt could not start). */
export async function giveBack(owner: Ownership, error: unknown): Promise<RunOutcome> {
  if (isFsjobError(error, 'SUPERSEDED')) return superseded(owner);
  try {
    await persist(owner, 'end', () => owner.publishEnd('released', false, GIVE_BACK_DELAY, null), leaseWindow(owner, () => false));
  } catch (second) {
    if (isFsjobError(second, 'SUPERSEDED')) return superseded(owner);
    return { kind: 'aborted', error: asFsjobError(error), open: true };
  }
  return { kind: 'aborted', error: asFsjobError(error), open: false };
}

export function superseded(owner: Ownership): RunOutcome {
  owner.ctx.emit({ type: 'superseded', queue: owner.queue.root, job_id: owner.id, gen: owner.gen });
  return { kind: 'superseded' };
}

/** What an attempt came to, for `conclude`. */
export interface Ending {
  /** 'lost': the command's exit status died with whoever waited for it (the spawner, or its waiter), as with a dead owner. */
  stoppedBy: StopReason | 'fenced' | 'lost' | null;
  /** Whether the command was released / the handler called (the execution may have happened). */
  released: boolean;
  /** Exit 0, or the handler resolved. */
  ok: boolean;
  /** The exit code of a failed attempt (EXEC-10). */
  failCode: number;
  status: ExecStatus | null;
  startedMs: number | null;
  /** Null for a payload job, which has no output files (PAYLOAD-1, RCPT-5). */
  stdout: OutputSummary | null;
  stderr: OutputSummary | null;
  result?: JsonValue;
  message?: string | null;
  /** Said in the receipt when nothing else is (EXEC-12: an output held open outside the group). */
  note?: string;
}

/**
 * Publish what the attempt came to: the receipt (spec/running.md) or an end
 * record (RETRY-3, PREEMPT-1, WORKER-3). The attempt counts from its exec
 * record on (RETRY-1), so `attempt` is the attempts used.
 */
export async function conclude(owner: Ownership, spec: SpecRecord, attempt: number, e: Ending, window: FinishWindow): Promise<RunOutcome> {
  return await concludeSoon(owner, spec, attempt, e, window);
}

/** conclude, done before it returns where the record's publish is (a payload job's fsyncs inline, finishing.ts's persistSoon), else its promise. */
export function concludeSoon(owner: Ownership, spec: SpecRecord, attempt: number, e: Ending, window: FinishWindow): Soon<RunOutcome> {
  const remain = attempt < spec.max_attempts;
  const base = { attempts: attempt, status: e.status, started_ms: e.startedMs, stdout: e.stdout, stderr: e.stderr };
  const receipt = (fields: Omit<ReceiptFields, keyof typeof base>): Soon<RunOutcome> => {
    // A note (EXEC-12, EXEC-16) is said beside the outcome's own message, never instead of it.
    const message = fields.message == null || e.note === undefined ? (fields.message ?? e.note) : `${fields.message}; ${e.note}`;
    const published = persistSoon(owner, 'receipt', () => owner.publishReceiptSoon({ ...base, ...fields, ...(message === undefined ? {} : { message }) }, spec), window);
    return thenSoon(published, (record): RunOutcome => (record === undefined ? { kind: 'exists' } : { kind: 'receipt', receipt: record }));
  };
  const end = (reason: EndRecord['reason'], counted: boolean, retryDelayMs: number): Soon<RunOutcome> =>
    thenSoon(persistSoon(owner, 'end', () => owner.publishEnd(reason, counted, retryDelayMs, e.status), window), (record): RunOutcome => ({ kind: 'end', end: record }));
  return catchSoon(() => {
    switch (e.stoppedBy) {
      case 'force':
        return e.released
          ? receipt({ outcome: 'force_stopped', exit_code: 137, message: 'killed at once on cancel-force.json (CANCEL-3)' })
          : receipt({ outcome: 'cancelled', exit_code: 130, message: 'cancelled before it ran' });
      case 'cancel':
        return receipt({ outcome: 'cancelled', exit_code: 130, message: e.released ? 'stopped on cancel.json (CANCEL-3)' : 'cancelled before it ran' });
      case 'preempt':
        return end('preempted', false, 0);
      case 'shutdown':
        // WORKER-3. An attempt stopped before its release never ran: it is given back uncounted.
        if (!e.released) return end('released', false, 0);
        return remain
          ? end('shutdown', true, 0)
          : receipt({ outcome: 'lost', exit_code: 125, reason: 'shutdown', message: 'the consumer stopped the last attempt while shutting down (WORKER-3)' });
      case 'timeout':
        return remain
          ? end('timed_out', true, spec.retry_delay_ms)
          : receipt({ outcome: 'timed_out', exit_code: 124, message: `ran longer than timeout_ms ${spec.timeout_ms} (EXEC-8)` });
      case 'fenced':
      case 'lost':
        // LEASE-6, and a status lost with the spawner or its waiter as a dead owner's (RECOV-1): counted; with no attempt left, lost.
        return remain
          ? end('failed', true, spec.retry_delay_ms)
          : receipt({ outcome: 'lost', exit_code: 125, reason: 'owner_lost', message: e.stoppedBy === 'lost' ? e.message ?? null : 'stopped because its lease could not be renewed or lapsed (LEASE-2, LEASE-6)' });
      default:
        if (e.ok) return receipt({ outcome: 'succeeded', exit_code: 0, ...(e.result === undefined ? {} : { result: e.result }) });
        return remain
          ? end('failed', true, spec.retry_delay_ms)
          : receipt({ outcome: 'failed', exit_code: e.failCode, message: e.message ?? null });
    }
  }, (error) => {
    if (isFsjobError(error, 'SUPERSEDED')) return superseded(owner);
    throw error;
  });
}

/** Runs a command job (spec/running.md) under `guardian` (WORKER-2), its leader started by `launcher` (the worker's spawner). */
export function runCommand(ticket: RunTicket, deps: { guardian?: Guardian | undefined; launcher?: Launcher | undefined }): RunningJob {
  const { owner, spec } = ticket;
  const ctx: Context = owner.ctx;
  const attempt = ticket.attemptsUsed + 1;
  // EXEC-15: under a policy the resolved program runs, not what the job's PATH would find; SPEC-3: the bytes the spec holds.
  const argv = commandArgv(spec.argv ?? [], ticket.program);
  let command: RunningCommand | undefined;
  let recorded: { pgid: number } | undefined;
  let pending: StopReason | null = null;
  let phase: 'starting' | 'running' | 'stopping' = 'starting';
  let shuttingDown = false;
  // Once the leader exited the attempt is over: the control loop only renews the lease while the generation is finished.
  let exited = false;
  // LEASE-6 at the leader's exit: lapsed then, the status may be the guardian's doing; a lapse after it changes nothing.
  let fencedAtExit: boolean | undefined;
  const stop = (reason: StopReason): void => {
    if (reason === 'shutdown') shuttingDown = true;
    if (exited) return;
    if (reason !== 'timeout') phase = 'stopping';
    if (command === undefined) pending ??= reason;
    else command.stop(reason);
  };
  const control = new ControlLoop(owner, {
    spec,
    attempt,
    phase: () => (exited ? 'finishing' : phase),
    bytes: () => command?.outputBytes() ?? { stdout: 0, stderr: 0 },
    progress: () => null,
    stop,
  });

  const done = (async (): Promise<RunOutcome> => {
    let outputs;
    try {
      outputs = await owner.createOutputs();
    } catch (error) {
      await ticket.stdin?.close().catch(() => undefined);
      return giveBack(owner, error);
    }
    control.start();
    let result: CommandResult;
    try {
      command = startCommand(
        {
          argv,
          cwd: spec.cwd,
          env: commandEnv(spec, owner.queue.root, attempt),
          stdin: ticket.stdin,
          stdout: outputs.stdout,
          stderr: outputs.stderr,
          maxOutputBytes: Math.min(spec.max_output_bytes, ctx.maxOutputBytes),
          outputKeep: outputKeepOf(spec),
          timeoutMs: spec.timeout_ms,
          killGraceMs: spec.kill_grace_ms,
        },
        {
          record: async (group) => {
            recorded = group;
            await owner.publishExec(attempt, group);
            phase = 'running';
            ctx.emit({ type: 'started', queue: owner.queue.root, job_id: owner.id, gen: owner.gen, attempt });
          },
          guardian: deps.guardian,
          ...(deps.launcher === undefined ? {} : { launcher: deps.launcher }),
          leaseDeadline: () => control.guardianDeadline(),
          // The command's started instant is one this owner writes (LEASE-4: never before its earlier ones).
          clock: { nowMs: () => owner.writeTimeMs(), sleep: (ms, signal) => ctx.clock.sleep(ms, signal), monotonicMs: () => monotonicMs(ctx.clock) },
          ...(ctx.cgroup === undefined ? {} : { cgroup: new AttemptCgroup(ctx.cgroup, owner.id, owner.gen) }),
          leaderExited: () => {
            fencedAtExit = control.settle();
          },
        },
      );
      // LEASE-5: every successful renewal moves the guardian's deadline for this group.
      control.onRenewed = () => {
        if (recorded !== undefined) deps.guardian?.renew(recorded.pgid, control.guardianDeadline());
      };
      if (pending !== null) command.stop(pending);
      result = await command.done;
    } catch (error) {
      control.stop();
      return giveBack(owner, error);
    } finally {
      await ticket.stdin?.close().catch(() => undefined);
    }
    exited = true;
    // LEASE-6: an execution that ended while this process was stopped past its lease is fenced;
    // one whose end was seen in time keeps its outcome, however long finishing then takes.
    const fenced = fencedAtExit ?? control.settle();
    try {
      return await finishCommand(result, fenced);
    } finally {
      control.stop();
    }
  })();

  /** RCPT-7: the window closes on shutdown, on a superseded claim, or once the lease went lease_ms without a renewal. */
  const window: FinishWindow = { closed: () => shuttingDown || control.superseded || control.lapsed() };

  async function finishCommand(result: CommandResult, fenced: boolean): Promise<RunOutcome> {
    if (control.superseded) return superseded(owner);
    if (!result.groupStopped) {
      const reason = `process group ${result.group?.pgid ?? '?'} could not be proven stopped after its leader exited (EXEC-11)`;
      const group = result.group;
      if (group === null || !(await proveStoppedLater(owner, group, spec.kill_grace_ms, window, reason))) {
        if (control.superseded) return superseded(owner);
        ctx.emit({ type: 'unproven', queue: owner.queue.root, job_id: owner.id, gen: owner.gen, clause: 'EXEC-11', reason });
        return { kind: 'unproven', reason };
      }
      deps.guardian?.untrack(group.pgid);
    }
    // A leader that was never released exited without running anything: there is no command status to report.
    const status: ExecStatus | null = !result.released
      ? null
      : result.exit !== null
        ? { exit: result.exit, signal: null }
        : result.signal !== null
          ? { exit: null, signal: result.signal }
          : null;
    const lost = result.statusLost;
    return conclude(owner, spec, attempt, {
      stoppedBy: fenced ? 'fenced' : (result.stoppedBy ?? (lost === null ? null : 'lost')), // EXEC-14: a cause fsjob acted on first
      released: result.released,
      ok: result.exit === 0,
      failCode: result.exit ?? (result.signal !== null ? signalExitCode(result.signal) : 125),
      status,
      startedMs: result.startedMs,
      stdout: { gen: owner.gen, ...result.stdout },
      stderr: { gen: owner.gen, ...result.stderr },
      message: result.exit !== null ? `exited with status ${result.exit}` : result.signal !== null ? `killed by ${result.signal}` : lost,
      ...outsideNote(result),
    }, window);
  }

  return { owner, spec, stop: (reason) => stop(reason), done };
}
