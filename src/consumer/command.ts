/**
 * Running one attempt of a command job (spec/running.md).
 *
 * The armed handshake (EXEC-2, EXEC-3): the command's process group is
 * created first, with a leader that waits on a pipe before it executes
 * anything. Only after the caller has durably recorded the group (exec.<g>.json)
 * is the leader released; if this process dies before that, the leader reads
 * end of file and exits 125 without running the command. So no command ever
 * runs unrecorded, and recovery can always find and stop what is running.
 * Who forks the leader is a launcher's business (launch.ts): a worker's
 * spawner (spawner.ts), or node's own spawn.
 *
 * Stopping (EXEC-8, EXEC-11, CANCEL-3, OWN-1, PREEMPT-1): every stop signals
 * the whole group, never a pid alone, and escalates to SIGKILL after its
 * grace. When the leader exits, stragglers in its group are stopped too:
 * nothing of a job runs after its attempt ends.
 */
import type { SafeHandle } from '../fs/safefs.ts';
import { processStart, selfIdentity, type ProcessGroup } from '../model/identity.ts';
import { stopGroup } from '../model/groups.ts';
import { FsjobError } from '../base/errors.ts';
import type { Clock } from '../base/clock.ts';
import { systemClock } from '../base/clock.ts';
import { CANCEL_GRACE } from '../base/constants.ts';
import { OutputCapture, type OutputSummary } from './output.ts';
import type { OutputKeep } from '../model/output-keep.ts';
import type { Guardian } from './guardian.ts';
import type { AttemptCgroup, CgroupStop } from './cgroup.ts';
import { directLauncher, type Launcher, type Leader } from './launch.ts';

export type StopReason = 'timeout' | 'cancel' | 'force' | 'preempt' | 'superseded' | 'shutdown';

export interface CommandSpec {
  /** The command line, as the bytes to pass (SPEC-3: commandArgv builds it from the spec). */
  argv: Buffer[];
  cwd: string;
  /** The whole environment, as the bytes to pass (EXEC-6, SPEC-3: commandEnv). */
  env: Record<string, Buffer>;
  /** An open descriptor on the job's stdin file, or null for /dev/null (EXEC-7). */
  stdin: SafeHandle | null;
  /** Exclusively created output files (EXEC-1); the engine fsyncs and closes them. */
  stdout: SafeHandle;
  stderr: SafeHandle;
  maxOutputBytes: number;
  /** Which bytes of a longer stream are kept (EXEC-17). @default 'head' */
  outputKeep?: OutputKeep;
  timeoutMs: number;
  killGraceMs: number;
}

/** The recorded execution: the group's leader pid (= pgid) and its start on this host (exec.<g>.json). */
export type RecordedGroup = ProcessGroup;

export interface CommandHooks {
  /** Durably records the group (publishes exec.<g>.json). Throwing aborts the attempt unreleased. */
  record(group: RecordedGroup): Promise<void>;
  guardian?: Guardian;
  /** The guardian's deadline for the group unless its claim is renewed (LEASE-5). */
  leaseDeadline?: () => number | undefined;
  clock?: Clock;
  /** EXEC-16, opt-in: the attempt's cgroup; the gate joins it before its release, and what is left in it is killed at the end. */
  cgroup?: AttemptCgroup;
  /** Who forks the group's leader: the worker's spawner. @default node's own spawn (launch.ts) */
  launcher?: Launcher;
  /** Called once the leader's exit status is collected: the instant LEASE-6 judges a lapse at. */
  leaderExited?: () => void;
}

export interface CommandResult {
  /** Whether the command was released (so the attempt counts, RETRY-1). */
  released: boolean;
  group: RecordedGroup | null;
  exit: number | null;
  signal: NodeJS.Signals | null;
  /** Why fsjob stopped the command, when it did. */
  stoppedBy: StopReason | null;
  startedMs: number | null;
  endedMs: number;
  /**
   * Whether the whole group was proven stopped after the leader exited
   * (EXEC-11, ID-8). False means a member survived SIGKILL or could not be
   * judged: the caller must not publish an end or a receipt (RECOV-1 leaves
   * such an execution alone, and so does its own owner).
   */
  groupStopped: boolean;
  stdout: OutputSummary;
  stderr: OutputSummary;
  /** The owner stopped waiting for the output pipes (EXEC-12): a process outside the group held them. */
  drainCut: boolean;
  /**
   * Why the exit status is unknown, when it is: whoever waited for the
   * leader died with it (the spawner, or its waiter). `exit` and `signal` are
   * null then, and the group was stopped like a dead owner's (RECOV-1).
   */
  statusLost: string | null;
  /** What the cgroup stop killed after the group's (EXEC-16), or null without a cgroup. */
  cgroup: CgroupStop | null;
}

export interface RunningCommand {
  /** Ask the command to stop; a later, stronger reason (force) escalates. */
  stop(reason: StopReason): void;
  /** Live byte counts, for heartbeats. */
  outputBytes(): { stdout: number; stderr: number };
  readonly done: Promise<CommandResult>;
}

/** Which reasons kill at once, and the grace of the others. */
function graceFor(reason: StopReason, killGraceMs: number): number {
  switch (reason) {
    case 'force':
    case 'superseded':
      return 0;
    case 'cancel':
      return CANCEL_GRACE;
    default:
      return killGraceMs;
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false; // ESRCH: the group is gone
  }
}

export function startCommand(spec: CommandSpec, hooks: CommandHooks): RunningCommand {
  const clock = hooks.clock ?? systemClock;
  const stdoutCapture = new OutputCapture(spec.stdout, spec.maxOutputBytes, spec.outputKeep);
  const stderrCapture = new OutputCapture(spec.stderr, spec.maxOutputBytes, spec.outputKeep);
  let group: RecordedGroup | null = null;
  let released = false;
  let stoppedBy: StopReason | null = null;
  let leaderExited = false;
  let killTimer: NodeJS.Timeout | undefined;
  let startedMs: number | null = null;

  const escalate = (): void => {
    if (group !== null) signalGroup(group.pgid, 'SIGKILL');
  };

  const stop = (reason: StopReason): void => {
    if (group === null) {
      stoppedBy ??= reason;
      return;
    }
    const grace = graceFor(reason, spec.killGraceMs);
    const stronger = stoppedBy === null || (grace === 0 && graceFor(stoppedBy, spec.killGraceMs) > 0);
    if (!stronger) return;
    stoppedBy = reason;
    if (grace === 0) {
      escalate();
      return;
    }
    signalGroup(group.pgid, 'SIGTERM');
    clearTimeout(killTimer);
    killTimer = setTimeout(escalate, grace);
    killTimer.unref();
  };

  const done = (async (): Promise<CommandResult> => {
    let leader: Leader;
    try {
      leader = await (hooks.launcher ?? directLauncher).launch({ argv: spec.argv as [Buffer, ...Buffer[]], cwd: spec.cwd, env: spec.env, stdinFd: spec.stdin?.fd ?? null });
    } catch (error) {
      await closeQuietly(spec.stdout, spec.stderr);
      throw error instanceof FsjobError ? error : new FsjobError('IO', `could not start the command group: ${(error as Error).message}`, { clause: 'EXEC-2' });
    }
    leader.connect(stdoutCapture, stderrCapture);
    const pid = leader.pid;

    try {
      // EXEC-16: into the cgroup while the gate still waits, so nothing of the command starts outside it.
      await hooks.cgroup?.adopt(pid);
      // ID-2: the start the leader reported of itself (the spawner's bash chain), else read here.
      const start = leader.start ?? (await processStart(pid))?.start;
      if (start === undefined) throw new FsjobError('IO', `the command group leader ${pid} vanished before it was recorded`, { clause: 'EXEC-3' });
      const self = await selfIdentity();
      group = { pgid: pid, start, boot_id: self.boot_id, pid_ns: self.pid_ns };
      hooks.guardian?.track(group, hooks.leaseDeadline?.(), hooks.cgroup?.path);
      await hooks.record(group);
    } catch (error) {
      // Never released: kill the gate and report the attempt as not started.
      signalGroup(pid, 'SIGKILL');
      leader.withhold();
      await leader.ended;
      await hooks.cgroup?.stop(pid, clock);
      hooks.guardian?.untrack(pid);
      await leader.drain(clock);
      await Promise.all([stdoutCapture.finish(), stderrCapture.finish()]).catch(() => undefined);
      await closeQuietly(spec.stdout, spec.stderr);
      leader.dispose();
      throw error;
    }

    if (stoppedBy !== null) {
      // Stopped before release (a cancel raced the recording): the command never runs.
      leader.withhold();
    } else {
      startedMs = clock.nowMs();
      leader.release();
      released = true;
    }
    const timeout = setTimeout(() => stop('timeout'), spec.timeoutMs);
    timeout.unref();

    const end = await leader.ended;
    leaderExited = true;
    hooks.leaderExited?.();
    clearTimeout(timeout);
    clearTimeout(killTimer);
    // EXEC-11: stragglers of the group do not outlive the attempt. The leader
    // is reaped now, so the group is judged by its members (zombies count as
    // stopped: an init that never reaps must not hold the attempt open). When
    // its status was lost with the spawner or its waiter, the leader itself may still run:
    // the group is stopped as a dead owner's would be (RECOV-1).
    const groupStopped = groupGone(group.pgid) || (await stopGroup(group, { graceMs: spec.killGraceMs, clock })) === 'stopped';
    // EXEC-16: then whatever left the group but not the cgroup; its pipes close with it.
    const cgroup = hooks.cgroup === undefined ? null : await hooks.cgroup.stop(group.pgid, clock);
    const cut = await leader.drain(clock);
    leader.dispose();
    // An unproven group stays with the guardian: if this worker dies, it still gets stopped.
    if (groupStopped) hooks.guardian?.untrack(group.pgid);
    const [out, err] = await Promise.all([stdoutCapture.finish(), stderrCapture.finish()]);
    // EXEC-12: past the drain limit the totals are unknown.
    const stdout: OutputSummary = cut ? { ...out, bytes_total: null } : out;
    const stderr: OutputSummary = cut ? { ...err, bytes_total: null } : err;
    // The engine owns the output descriptors from here: they are durable, so close them.
    await Promise.all([spec.stdout.close(), spec.stderr.close()]);
    const lost = 'lost' in end ? end.lost : null;
    return {
      released,
      group,
      exit: 'lost' in end ? null : end.exit,
      signal: 'lost' in end ? null : end.signal,
      stoppedBy,
      startedMs,
      endedMs: clock.nowMs(),
      stdout,
      stderr,
      groupStopped,
      drainCut: cut,
      cgroup,
      statusLost: lost,
    };
  })();

  return {
    stop(reason) {
      if (!leaderExited) stop(reason);
    },
    outputBytes: () => ({ stdout: stdoutCapture.bytesTotal, stderr: stderrCapture.bytesTotal }),
    done,
  };
}

/**
 * EXEC-11's usual case, without stopGroup's reads of /proc: no process is
 * left with the group's id (kill(-pgid, 0) fails ESRCH), so the group is
 * stopped. This process recorded the group on this host a moment ago, so
 * there is no identity to check: a pgid without a member is no group.
 * Anything else (a member, EPERM) takes stopGroup's whole judgement.
 */
function groupGone(pgid: number): boolean {
  // The usual answer is an error: capturing its stack would cost more than the probe.
  const depth = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    process.kill(-pgid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  } finally {
    Error.stackTraceLimit = depth;
  }
}

async function closeQuietly(...handles: SafeHandle[]): Promise<void> {
  await Promise.all(handles.map((handle) => handle.close().catch(() => undefined)));
}
