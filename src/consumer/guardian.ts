/**
 * The guardian of a consumer (spec WORKER-2, LEASE-5): a small sh process that
 * outlives the consumer and stops its recorded command groups within
 * GUARDIAN_LIMIT when the consumer dies, however it dies, or when the consumer
 * stops renewing a group's claim (it is SIGSTOPped, or stuck in a filesystem
 * call that hangs): the deadman that makes LEASE-2 hold for an owner that does
 * not run.
 *
 * The consumer holds the only write end of the guardian's stdin. It announces
 * each group before the command may start ("+ pgid start deadline [cgroup]"), moves the
 * deadline after each successful renewal ("r pgid deadline") and retires the
 * group when the attempt is over ("- pgid"). A deadline is in milliseconds of
 * /proc/uptime, the monotonic clock the guardian reads: the start of the last
 * renewal plus lease_ms. End of file on that pipe is the other signal: a
 * SIGKILLed consumer cannot forget to send it. The guardian runs in its own
 * session, so a signal aimed at the consumer's terminal group leaves it alive
 * to do its job.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { GUARDIAN_GRACE } from '../base/constants.ts';
import { FsjobError } from '../base/errors.ts';

declare const __FSJOB_GUARDIAN_SCRIPT: string | undefined;

/**
 * The text of guardian.sh. The build (tools/build/build.ts) writes it into the
 * compiled module, so dist/ and any bundle of it carry the script instead of
 * looking for a file beside the code; run from the sources, it is read from
 * guardian.sh here.
 */
const GUARDIAN_SCRIPT: string =
  typeof __FSJOB_GUARDIAN_SCRIPT === 'string' ? __FSJOB_GUARDIAN_SCRIPT : readFileSync(new URL('./guardian.sh', import.meta.url), 'utf8');

/**
 * What a process listing shows as the guardian's name ($0). The script
 * itself travels in the environment, not on the command line, so that `ps`
 * shows one short line: /bin/sh -c eval "$FSJOB_GUARDIAN_SCRIPT" fsjob-guardian.
 */
export const GUARDIAN_NAME = 'fsjob-guardian';

/** The longest an untrack line waits for another line to go with (Guardian.untrack). */
const UNTRACK_DELAY_MS = 200;

export interface GuardedGroup {
  pgid: number;
  start: string;
}

/**
 * How long a reading of /proc/uptime serves, advanced by this process's
 * monotonic clock: each command's announce and each renewal asked for one
 * (an open, a read and a close on the main thread per job).
 */
const UPTIME_REUSE_MS = 1000;
/** How far the wall clock may move apart from the monotonic one before a reading is taken again (a suspend: CLOCK_BOOTTIME runs on, the monotonic clock does not). */
const UPTIME_SKEW_MS = 20;

let uptimeReading: { uptime: number; mono: number; wall: number } | undefined;

/**
 * Now on the guardian's clock: milliseconds of /proc/uptime (CLOCK_BOOTTIME,
 * shared by every process of the host), or undefined where there is none.
 * A reading at most UPTIME_REUSE_MS old is advanced by performance.now(),
 * unless the wall clock moved otherwise meanwhile: across a suspend the
 * uptime runs on while the monotonic clock stands, and a deadline made
 * from a stale reading would come early.
 */
export function uptimeMs(): number | undefined {
  const mono = performance.now();
  const wall = Date.now();
  const last = uptimeReading;
  if (last !== undefined) {
    const since = mono - last.mono;
    if (since >= 0 && since < UPTIME_REUSE_MS && Math.abs(wall - last.wall - since) < UPTIME_SKEW_MS) return Math.round(last.uptime + since);
  }
  try {
    const seconds = Number(readFileSync('/proc/uptime', 'latin1').split(' ')[0]);
    if (!Number.isFinite(seconds)) return undefined;
    uptimeReading = { uptime: seconds * 1000, mono, wall };
    return Math.round(seconds * 1000);
  } catch {
    return undefined;
  }
}

/** The guardian's deadline for a claim renewed `sinceRenewalMs` ago with lease `leaseMs` (LEASE-5); undefined without /proc/uptime. */
export function leaseDeadline(sinceRenewalMs: number, leaseMs: number): number | undefined {
  const now = uptimeMs();
  return now === undefined ? undefined : Math.max(0, Math.round(now - sinceRenewalMs + leaseMs));
}

/**
 * A worker's guardian process (WORKER-2): announce each command group before it
 * starts (`track`), retire it when done (`untrack`); if this process dies, the guardian stops what is left.
 */
export class Guardian {
  private child: ChildProcess | undefined;
  private exited = false;
  private readonly tracked = new Map<number, { start: string; deadline: number | undefined; cgroup: string | undefined }>();
  /** `- pgid` lines not yet written: they go with the next line, or within UNTRACK_DELAY_MS. */
  private untracked = '';
  private untrackTimer: NodeJS.Timeout | undefined;

  /** Starts the guardian process; the worker must not start commands before this resolves. */
  async start(): Promise<void> {
    const child = spawn('/bin/sh', ['-c', 'eval "$FSJOB_GUARDIAN_SCRIPT"', GUARDIAN_NAME], {
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore'],
      env: { PATH: '/usr/local/bin:/usr/bin:/bin', FSJOB_GUARDIAN_SCRIPT: GUARDIAN_SCRIPT, FSJOB_GUARDIAN_GRACE_TENTHS: String(GUARDIAN_GRACE / 100) },
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    child.unref();
    // Only this child's death makes this guardian unhealthy: a late event of
    // a predecessor must not mark its replacement dead.
    child.once('exit', () => {
      if (this.child === child) this.exited = true;
    });
    // A write to a guardian that died must surface as "unhealthy", not as an
    // unhandled stream error that kills the worker.
    child.stdin?.on('error', () => {
      if (this.child === child) this.exited = true;
    });
    this.child = child;
    this.exited = false;
    this.untracked = ''; // a new guardian is told only what is tracked
    for (const [pgid, { start, deadline, cgroup }] of this.tracked) this.send(announce(pgid, start, deadline, cgroup));
  }

  /** The guardian's pid while it runs. */
  get pid(): number | undefined {
    return this.healthy ? this.child?.pid : undefined;
  }

  /** True while a guardian process is alive to protect new commands. */
  get healthy(): boolean {
    return this.child !== undefined && !this.exited;
  }

  /**
   * Announces a group before its command may start, with the deadline by
   * which the guardian stops it unless renewed (LEASE-5); refuses when no
   * guardian protects it. With `cgroup` (EXEC-16, a path without white
   * space) the guardian also kills what is left in that cgroup when it stops
   * the group, and removes it.
   */
  track(group: GuardedGroup, deadline?: number, cgroup?: string): void {
    if (!this.healthy) {
      throw new FsjobError('IO', 'the guardian process is not running, so a command could outlive this worker; refusing to start it', {
        clause: 'WORKER-2',
      });
    }
    this.tracked.set(group.pgid, { start: group.start, deadline, cgroup });
    this.send(announce(group.pgid, group.start, deadline, cgroup));
  }

  /** The claim of a tracked group was renewed: its new deadline (LEASE-5). */
  renew(pgid: number, deadline: number | undefined): void {
    const entry = this.tracked.get(pgid);
    if (entry === undefined || deadline === undefined) return;
    entry.deadline = deadline;
    this.send(`r ${pgid} ${deadline}\n`);
  }

  /**
   * The group's attempt is over. The line waits for the next one this
   * worker writes (at most UNTRACK_DELAY_MS): each write wakes the guardian,
   * and at concurrency 8 an announce follows within milliseconds. Until it
   * arrives the guardian would, if this worker died, stop only a group
   * that still has the recorded leader or a member (guardian.sh `matches`):
   * the group of an attempt that is over has none (EXEC-11), and a leader
   * pid used again has another start.
   */
  untrack(pgid: number): void {
    if (!this.tracked.delete(pgid) || !this.healthy) return;
    this.untracked += `- ${pgid}\n`;
    this.untrackTimer ??= setTimeout(() => {
      this.untrackTimer = undefined;
      this.send('');
    }, UNTRACK_DELAY_MS).unref();
  }

  /** Restarts a guardian that died, handing it every group still running. */
  async ensure(): Promise<void> {
    if (!this.healthy) await this.start();
  }

  /** Clean exit: nothing is tracked any more, so the guardian exits without signalling. */
  close(): void {
    clearTimeout(this.untrackTimer);
    this.untrackTimer = undefined;
    this.untracked = '';
    this.child?.stdin?.end();
    this.child = undefined;
  }

  /** Writes `line` after the untrack lines that wait (one write, one wake-up of the guardian). */
  private send(line: string): void {
    const text = this.untracked + line;
    this.untracked = '';
    clearTimeout(this.untrackTimer);
    this.untrackTimer = undefined;
    if (text !== '' && this.healthy) this.child?.stdin?.write(text);
  }
}

function announce(pgid: number, start: string, deadline: number | undefined, cgroup: string | undefined): string {
  if (cgroup !== undefined) return `+ ${pgid} ${start} ${deadline ?? 'none'} ${cgroup}\n`;
  return deadline === undefined ? `+ ${pgid} ${start}\n` : `+ ${pgid} ${start} ${deadline}\n`;
}
