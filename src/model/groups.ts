/**
 * The process group of an execution (ID-8, ID-9): is it still running, and
 * signalling or stopping it only while it is the group that was recorded.
 *
 * - ID-8 a process group is `stopped` only on proof: no member left (ESRCH),
 *   a leader pid now carrying another start, or zombie-only membership seen
 *   by two consecutive scans. A foreign group is `unknown`.
 * - ID-9 a group is signalled only while its identity still matches.
 *
 * Residual limit: a leaderless group is accepted as the recorded one if it
 * has live members; Linux never reuses a pid number while a group of that id
 * has members, so this can only be wrong if the recorded group died, the
 * number was reused as a new group's leader, and that leader exited leaving
 * members, all between two observations.
 */
import { errnoOf } from '../base/errors.ts';
import { wrapIo } from '../fs/io-error.ts';
import { deadlineIn, systemClock } from '../base/clock.ts';
import type { Clock } from '../base/clock.ts';
import {
  isDeadState,
  isLocal,
  processStart,
  readProcStat,
  requirePgid,
  systemOf,
  type GroupState,
  type IdentityOptions,
  type ProcessGroup,
  type ProcessStart,
  type ProcStatFields,
  type SignalOutcome,
  type System,
} from './identity.ts';

const POLL_MS = 50;
const KILL_WAIT_MS = 2000;

type GroupProbe = 'present' | 'absent' | 'unknown';

/** kill(-pgid, 0): ESRCH proves no process at all is left in the group. */
function probeGroup(system: System, pgid: number): GroupProbe {
  try {
    system.kill(-pgid, 0);
    return 'present';
  } catch (error) {
    const errno = errnoOf(error);
    if (errno === 'ESRCH') return 'absent';
    return errno === 'EPERM' ? 'present' : 'unknown';
  }
}

/** States of every process whose group is pgid, or undefined when they cannot all be seen. */
async function memberStates(system: System, pgid: number): Promise<string[] | undefined> {
  if (system.platform === 'darwin') {
    const { status, stdout } = await system.exec('ps', ['-A', '-o', 'pgid=', '-o', 'stat=']);
    if (status !== 0) return undefined;
    const states: string[] = [];
    for (const line of stdout.split('\n')) {
      const [group, stat] = line.trim().split(/\s+/);
      if (Number(group) === pgid && stat !== undefined) states.push(stat.slice(0, 1));
    }
    return states;
  }
  let names: string[];
  try {
    names = await system.fs.readdir('/proc');
  } catch {
    return undefined;
  }
  const pids = names.filter((name) => /^\d+$/.test(name)).map(Number);
  const seen = await Promise.all(
    pids.map(async (pid): Promise<ProcStatFields | null | 'unreadable'> => {
      try {
        return await readProcStat(system, pid);
      } catch {
        return 'unreadable';
      }
    }),
  );
  if (seen.includes('unreadable')) return undefined;
  const states: string[] = [];
  for (const fields of seen) {
    if (fields !== null && fields !== 'unreadable' && fields.pgrp === pgid) states.push(fields.state);
  }
  return states;
}

type Look =
  | { kind: 'foreign' }
  | { kind: 'unreadable' }
  /** The leader pid carries another start: the recorded group is gone. */
  | { kind: 'replaced' }
  /** The leader has the recorded start, or the group has no leader (null). */
  | { kind: 'matching'; system: System; leader: ProcessStart | null };

/** Whether the recorded group can be judged here, and its leader when it matches. */
async function lookAt(group: ProcessGroup, options: IdentityOptions): Promise<Look> {
  requirePgid(group.pgid);
  const system = systemOf(options);
  if (!(await isLocal(group, options))) return { kind: 'foreign' };
  let leader: ProcessStart | null;
  try {
    leader = await processStart(group.pgid, { ...system });
  } catch {
    return { kind: 'unreadable' };
  }
  if (leader !== null && leader.start !== group.start) return { kind: 'replaced' };
  return { kind: 'matching', system, leader };
}

/** ID-8: is the recorded process group still running? */
export async function groupState(group: ProcessGroup, options: IdentityOptions = {}): Promise<GroupState> {
  const looked = await lookAt(group, options);
  if (looked.kind === 'foreign' || looked.kind === 'unreadable') return 'unknown';
  // Linux never reuses a pid number while a group of that id has members, so
  // a leader pid with another start proves the recorded group is gone.
  if (looked.kind === 'replaced') return 'stopped';
  const { system, leader } = looked;
  const probe = probeGroup(system, group.pgid);
  if (probe !== 'present') return probe === 'absent' ? 'stopped' : 'unknown';
  if (leader !== null && !isDeadState(leader.state)) return 'running';
  // Leader gone or a zombie: decide from the members. A single /proc scan is
  // not atomic (a fork can land behind the cursor), so a zombie-only verdict
  // must be seen twice in a row.
  for (let scan = 0; scan < 2; scan++) {
    const states = await memberStates(system, group.pgid);
    if (states === undefined) return 'unknown';
    if (states.some((state) => !isDeadState(state))) return 'running';
    // kill(-pgid) saw someone, the scan saw no one: members hidden from us.
    if (states.length === 0 && probeGroup(system, group.pgid) !== 'absent') return 'unknown';
  }
  return 'stopped';
}

/**
 * ID-9: signal the recorded group, only while its identity still matches:
 * the leader is present with the recorded start, or the group is leaderless
 * with live members. 'refused' when it does not match, is foreign, or EPERM.
 */
export async function signalGroup(
  group: ProcessGroup,
  signal: NodeJS.Signals,
  options: IdentityOptions = {},
): Promise<SignalOutcome> {
  const looked = await lookAt(group, options);
  if (looked.kind !== 'matching') return 'refused';
  const { system, leader } = looked;
  // A zombie leader (its parent has not reaped it yet) runs nothing: judge by
  // the members, as groupState does, so a group of zombies is 'stopped'.
  if (leader === null || isDeadState(leader.state)) {
    const states = await memberStates(system, group.pgid);
    if (states === undefined) return 'refused';
    if (!states.some((state) => !isDeadState(state))) {
      return (await groupState(group, options)) === 'stopped' ? 'stopped' : 'refused';
    }
  }
  try {
    system.kill(-group.pgid, signal);
    return 'signalled';
  } catch (error) {
    const errno = errnoOf(error);
    if (errno === 'ESRCH') return 'stopped';
    if (errno === 'EPERM') return 'refused';
    throw wrapIo(error, `process group ${group.pgid}`, `sending ${signal} to`);
  }
}

async function waitUntilStopped(
  group: ProcessGroup,
  waitMs: number,
  clock: Clock,
  options: IdentityOptions,
): Promise<boolean> {
  const passed = deadlineIn(clock, waitMs);
  for (;;) {
    if ((await groupState(group, options)) === 'stopped') return true;
    if (passed()) return false;
    await clock.sleep(POLL_MS);
  }
}

/** After a refused signal the group may still be provably gone. */
async function stoppedOrUnproven(group: ProcessGroup, options: IdentityOptions): Promise<'stopped' | 'unproven'> {
  return (await groupState(group, options)) === 'stopped' ? 'stopped' : 'unproven';
}

/**
 * Stop the recorded group: SIGTERM, wait up to graceMs (polling every 50 ms),
 * SIGKILL, wait up to 2 s. 'unproven' means it could not be shown stopped
 * (foreign, unreadable, EPERM, or survived SIGKILL, e.g. stuck in D state).
 */
export async function stopGroup(
  group: ProcessGroup,
  timing: { graceMs: number; clock?: Clock },
  options: IdentityOptions = {},
): Promise<'stopped' | 'unproven'> {
  const clock = timing.clock ?? systemClock;
  const initial = await groupState(group, options);
  if (initial !== 'running') return initial === 'stopped' ? 'stopped' : 'unproven';
  const term = await signalGroup(group, 'SIGTERM', options);
  if (term === 'stopped') return 'stopped';
  if (term === 'refused') return stoppedOrUnproven(group, options);
  if (await waitUntilStopped(group, timing.graceMs, clock, options)) return 'stopped';
  const kill = await signalGroup(group, 'SIGKILL', options);
  if (kill === 'stopped') return 'stopped';
  if (kill === 'refused') return stoppedOrUnproven(group, options);
  return (await waitUntilStopped(group, KILL_WAIT_MS, clock, options)) ? 'stopped' : 'unproven';
}
