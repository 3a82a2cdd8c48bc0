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

export interface GuardedGroup {
  pgid: number;
  start: string;
}

/**
 * Now on the guardian's clock: milliseconds of /proc/uptime (CLOCK_BOOTTIME,
 * shared by every process of the host), or undefined where there is none.
 */
export function uptimeMs(): number | undefined {
  try {
    const seconds = Number(readFileSync('/proc/uptime', 'latin1').split(' ')[0]);
    return Number.isFinite(seconds) ? Math.round(seconds * 1000) : undefined;
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

  untrack(pgid: number): void {
    if (this.tracked.delete(pgid)) this.send(`- ${pgid}\n`);
  }

  /** Restarts a guardian that died, handing it every group still running. */
  async ensure(): Promise<void> {
    if (!this.healthy) await this.start();
  }

  /** Clean exit: nothing is tracked any more, so the guardian exits without signalling. */
  close(): void {
    this.child?.stdin?.end();
    this.child = undefined;
  }

  private send(line: string): void {
    if (this.healthy) this.child?.stdin?.write(line);
  }
}

function announce(pgid: number, start: string, deadline: number | undefined, cgroup: string | undefined): string {
  if (cgroup !== undefined) return `+ ${pgid} ${start} ${deadline ?? 'none'} ${cgroup}\n`;
  return deadline === undefined ? `+ ${pgid} ${start}\n` : `+ ${pgid} ${start} ${deadline}\n`;
}
