/**
 * Forcing an interleaving instead of hoping for it: a role runs under the
 * crash injector and stops itself just before the call `pause` names (its
 * k-th mutating call in the queue, or its first link of a `claim.1.json`, ...). While it is stopped the case runs whatever must come first (another
 * consumer's claim, a recoverer, a cancel), then resumes it; the paused call
 * then happens, every time, after the other side's.
 *
 *   const a = await startRolePaused(ctx.impl, 'consume', { queue }, { op: 'link', path: '*claim.1.json' });
 *   const call = await a.paused;          // undefined: the run ended without reaching it
 *   await ctx.role('consume', { queue }); // B claims first
 *   a.resume();
 *   const result = await a.result;        // A's link failed: it must not run the job
 */
import { interposerPath } from '../crash/interposer.ts';
import { startWithCrash, type CrashRun, type CrashRunResult, type FaultPoint, type PausePoint } from '../crash/run.ts';
import { roleArgv, type Manifest, type Placeholders, type Role } from './manifest.ts';
import { roleEnv, type RoleRunOptions } from './process.ts';

export type { CrashRun, CrashRunResult, FaultPoint, PausePoint };

export interface PausedRoleOptions extends RoleRunOptions {
  /** The directory whose calls count (default: the queue). */
  root?: string;
  /** The role's wall clock starts this far off the host's; the run's setWallClockOffset moves it later (LEASE-4 cases). */
  wallClockOffsetMs?: number;
}

/** Starts `role` of `manifest` in its own process group, to stop at `pause` (crash/run.ts startWithCrash). */
export async function startRolePaused(manifest: Manifest, role: Role, values: Placeholders, pause: PausePoint, options: PausedRoleOptions = {}): Promise<CrashRun> {
  return startRoleInjected(manifest, role, values, { ...options, pause });
}

/**
 * Starts `role` of `manifest` under the crash injector, with or without a
 * pause point: a case that only moves the role's wall clock
 * (CrashRun.setWallClockOffset) needs no pause.
 */
export async function startRoleInjected(manifest: Manifest, role: Role, values: Placeholders, options: PausedRoleOptions & { pause?: PausePoint; fault?: FaultPoint } = {}): Promise<CrashRun> {
  const root = options.root ?? values.queue;
  if (root === undefined) throw new TypeError('startRoleInjected: no queue and no root to count calls in');
  return startWithCrash({
    argv: roleArgv(manifest, role, values),
    cwd: manifest.dir,
    env: roleEnv(manifest, options.env),
    root,
    ...(options.pause === undefined ? {} : { pause: options.pause }),
    ...(options.fault === undefined ? {} : { fault: options.fault }),
    ...(options.wallClockOffsetMs === undefined ? {} : { wallClockOffsetMs: options.wallClockOffsetMs }),
    timeoutMs: options.timeoutMs ?? manifest.timeoutMs,
  });
}

/**
 * Runs `role` of `manifest` under the crash injector with `fault` forced on
 * its links or renames (crash/run.ts FaultPoint): the filesystem without
 * hard links, or the network client that hears EEXIST for its own link.
 */
export async function runRoleFaulted(manifest: Manifest, role: Role, values: Placeholders, fault: FaultPoint, options: PausedRoleOptions = {}): Promise<CrashRunResult> {
  return (await startRoleInjected(manifest, role, values, { ...options, fault })).result;
}

/**
 * Skips the case unless the crash injector (conformance/crash/interpose.c,
 * built with a C compiler) is there; `why` says what the case needs it for
 * ("to stop the producer at its dedupe hold").
 */
export async function needsInjector(ctx: { skip(reason: string): never }, why: string): Promise<void> {
  if (!(await interposerPath().then(() => true, () => false))) ctx.skip(`needs the crash injector (a C compiler) ${why}`);
}

/** How a run under the injector ended, with the last two lines of its stderr: for a check's message or evidence. */
export function describeInjectedRun(result: CrashRunResult): string {
  const how = result.timedOut ? 'killed after its time limit' : result.signal !== null ? `killed by ${result.signal}` : `exit ${result.exitCode}`;
  const tail = result.stderr.trim().split('\n').slice(-2).join(' | ').slice(0, 300);
  return tail === '' ? how : `${how}; stderr: ${tail}`;
}
