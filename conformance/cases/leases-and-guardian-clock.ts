/**
 * An owner's wall clock jumps while it runs a job (LEASE-4): "elapsed time
 * MUST be measured on a monotonic clock. An owner schedules its renewals
 * (LEASE-1) and its fencing (LEASE-2) by monotonic time, and never writes a
 * heartbeat_ms smaller than its previous renewal plus the monotonic time
 * elapsed since".
 *
 * identity/owner-clock-back, identity/owner-clock-ahead. The consume role
 * runs under the crash injector, whose wall-clock offset (crash/clock.ts,
 * interpose-clock.c) moves CLOCK_REALTIME for the role's processes only:
 * the host's clock, the monotonic clocks and the case's own clock stay. The
 * job (max_attempts 1, timeout_ms 15 min) runs until the case releases it.
 *
 * 1. The role starts with its wall clock PROBE_MS ahead. claim.1.json's
 *    claimed_ms shows whether the owner sees the offset at all: an owner that
 *    reads the clock without libc's dynamic symbols (a static binary, Go's
 *    vDSO calls, raw syscalls) writes the host's time, and the case skips
 *    with that reason instead of passing an owner it could not move.
 * 2. After the first renewal (state.1.json) the case moves the wall clock an
 *    hour back (or ahead), then watches state.1.json for WATCH_MS: longer
 *    than an owner that caches its wall clock and advances it by a monotonic
 *    one keeps the cache (fsjob-sh reads date(1) once a minute), so the jump
 *    reaches such an owner within the watch.
 * 3. It releases the command and checks, from what it saw on disk and when
 *    (its own monotonic clock):
 *    - renewals went on every RENEW_INTERVAL (+ TOLERANCE_MS) through the
 *      jump (LEASE-4, LEASE-1): an owner scheduling them by wall time stops
 *      renewing for an hour after a jump back;
 *    - every heartbeat_ms is at least the previous one plus the time between
 *      the two renewals (- TOLERANCE_MS for when the case saw them): a
 *      heartbeat from the jumped-back wall clock is an hour short (LEASE-4);
 *    - the job ends normally, once, with a succeeded receipt: neither a jump
 *      back (renewals stopped, then a lapsed lease) nor a jump ahead (a lease
 *      or a timeout measured on the wall clock) may fence it (LEASE-4,
 *      LEASE-2, EXEC-8);
 *    - the receipt does not finish before it started: its finished_ms is at
 *      least its started_ms plus the time the command is known to have run
 *      (from before the case saw its start line until the case released it,
 *      - TOLERANCE_MS): an owner that writes finished_ms from its
 *      jumped-back wall clock finishes an hour before it started (LEASE-4:
 *      every instant an owner writes for its generation).
 */
import { lstat, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { renewInterval } from '../../src/base/constants.ts';
import type { ClaimRecord, StateRecord } from '../../src/records/codec.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { listing } from '../runner/inspect.ts';
import type { CrashRun } from '../crash/run.ts';
import { sleep } from '../runner/process.ts';
import { reopen, stageJob } from '../runner/stage.ts';
import { sh } from './jobs.ts';
import { needsInjector } from '../runner/pause.ts';

/** Scheduling tolerance on a loaded 2-core machine, added to every bound the spec states. */
const TOLERANCE_MS = 3000;
const HOUR = 3_600_000;
/** How far ahead the role's wall clock starts: what claimed_ms must show if the owner sees the injector's clock. */
const PROBE_MS = 10 * 60_000;
/** How long a wall-clock cache may plausibly live (fsjob-sh's now_ms: a minute); the watch outlasts it. */
const WALL_CACHE_MS = 60_000;
const POLL_MS = 100;
const TIMEOUT_MS = 900_000;

/** One version of state.<g>.json the case saw: a renewal (a rename gives a new file). */
interface Seen {
  at: number; // the case's performance.now() when it saw it
  /** Its mtime: when it was written, on the host's clock, which no offset moves. */
  written: number;
  heartbeat: number | undefined;
  key: string;
}

/**
 * The time between two renewals: when the case saw them, or, when less,
 * when they were written (a case stalled on a loaded machine sees a renewal
 * late; its mtime is not late). An owner that writes a stale mtime gets the
 * time the case saw.
 */
function between(a: Seen, b: Seen): number {
  const seen = b.at - a.at;
  const written = b.written - a.written;
  return written >= 0 ? Math.min(seen, written) : seen;
}

async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/** Watches state.1.json: every new version (inode, mtime or content changed) is a renewal. */
function watchState(file: string): { seen: Seen[]; look: () => Promise<void>; lastLook: () => number } {
  const seen: Seen[] = [];
  let last = 0;
  const look = async (): Promise<void> => {
    try {
      const st = await lstat(file, { bigint: true });
      const text = await readFile(file, 'utf8');
      const key = `${st.ino}:${st.mtimeNs}:${text}`;
      last = performance.now();
      if (seen.at(-1)?.key === key) return;
      let heartbeat: number | undefined;
      try {
        const value = (JSON.parse(text) as Partial<StateRecord>).heartbeat_ms;
        heartbeat = typeof value === 'number' ? value : undefined;
      } catch {
        heartbeat = undefined;
      }
      seen.push({ at: last, written: Number(st.mtimeNs / 1_000_000n), heartbeat, key });
    } catch {
      // not there yet, or replaced between the lstat and the read: seen at the next look
    }
  };
  return { seen, look, lastLook: () => last };
}

async function clockJumpCase(ctx: CaseContext, jumpMs: number): Promise<void> {
  await needsInjector(ctx, 'to move the owner\'s wall clock');
  const label = jumpMs < 0 ? 'back' : 'ahead';
  const root = await ctx.newQueue(`clock-${label}`);
  const work = await ctx.subdir(`clock-${label}/work`);
  const log = path.join(work, 'starts.log');
  const release = path.join(work, 'release');
  // Runs until released; the bound only keeps a forgotten command from living on.
  const job = await stageJob(await reopen(root), {
    argv: sh(`printf 'start %s\\n' victim >> "$1"; i=0; while [ ! -e "$2" ] && [ "$i" -lt 3000 ]; do sleep 0.2; i=$((i + 1)); done`, log, release),
    cwd: work,
    max_attempts: 1,
    timeout_ms: TIMEOUT_MS,
  });
  const stateFile = path.join(job.dir, 'state.1.json');
  const claimFile = path.join(job.dir, 'claim.1.json');
  const began = Date.now();
  const run: CrashRun = await ctx.startRoleInjected('consume', { queue: root }, { wallClockOffsetMs: PROBE_MS, timeoutMs: 600_000 });
  const state = watchState(stateFile);
  let ended = false;
  let endedAt = 0;
  const end = (): void => {
    ended = true;
    endedAt = performance.now();
  };
  void run.result.then(end, end);
  // When the case first saw the command's start line: the command was released before then.
  let startSeenAt: number | undefined;
  const lookStart = async (): Promise<void> => {
    if (startSeenAt !== undefined) return;
    const seenNow = performance.now();
    if ((await readFile(log, 'utf8').catch(() => '')).includes('start victim')) startSeenAt = seenNow;
  };
  const watchUntil = async (done: () => boolean, ms: number): Promise<void> => {
    const giveUp = performance.now() + ms;
    while (!done() && !ended && performance.now() < giveUp) {
      await state.look();
      await lookStart();
      await sleep(POLL_MS);
    }
    await state.look();
    await lookStart();
  };
  try {
    // 1. The claim, and whether the owner's clock is the injector's.
    let claim: ClaimRecord | undefined;
    const claimGiveUp = performance.now() + 60_000;
    while (claim === undefined && !ended && performance.now() < claimGiveUp) {
      claim = await readJson<ClaimRecord>(claimFile);
      await state.look();
      if (claim === undefined) await sleep(POLL_MS);
    }
    claim ??= await readJson<ClaimRecord>(claimFile);
    const seenClaim = Date.now();
    if (claim === undefined) {
      run.kill();
      const result = await run.result;
      ctx.fail(['EXEC-3', 'MANIFEST-1'], 'the consumer never claimed the job, so the case could not move its clock', [`consume exited ${result.exitCode ?? result.signal}${result.timedOut ? ' (timed out)' : ''}: ${result.stderr.slice(-400)}`, ...listing(await ctx.snapshot(root))]);
      return;
    }
    // Claimed between `began` and `seenClaim` of the host's clock: PROBE_MS later on the owner's.
    const within = (lo: number, hi: number): boolean => claim.claimed_ms >= lo - TOLERANCE_MS && claim.claimed_ms <= hi + TOLERANCE_MS;
    if (within(began, seenClaim)) {
      ctx.skip(`the owner's wall clock does not see the injector's offset (claimed_ms ${claim.claimed_ms} is the host's time, not ${PROBE_MS} ms ahead): it reads the clock without libc's dynamic symbols (a static binary, the vDSO called directly, raw syscalls), so the case cannot move it`);
    }
    if (!within(began + PROBE_MS, seenClaim + PROBE_MS)) {
      ctx.skip(`claimed_ms ${claim.claimed_ms} is neither the host's time nor the injector's (${PROBE_MS} ms ahead): the case cannot tell which clock the owner reads`);
    }
    const renew = renewInterval(claim.lease_ms);

    // 2. The first renewal, then the jump, then the watch.
    await watchUntil(() => state.seen.length > 0, renew + TOLERANCE_MS + 30_000);
    if (state.seen.length === 0) {
      ctx.fail(['LEASE-1'], `no renewal (state.1.json) within RENEW_INTERVAL (${renew} ms) + ${TOLERANCE_MS + 30_000} ms of the claim, before any clock moved`, listing(await ctx.snapshot(root), new Set([job.id])));
      return;
    }
    run.setWallClockOffset(PROBE_MS + jumpMs);
    const jumpedAt = performance.now();
    await watchUntil(() => false, WALL_CACHE_MS + 2 * renew);
    const endedEarly = ended;
    const releasedAt = performance.now();
    const lookedAt = state.lastLook();
    await writeFile(release, '');
    while (!ended) {
      await state.look();
      await sleep(POLL_MS);
    }
    const result = await run.result;

    // 3. What the owner did through the jump.
    const seen = state.seen;
    const snapshot = await ctx.snapshot(root);
    const seenJob = snapshot.jobs.get(job.id);
    const starts = countBy(await readStarts(log)).get('victim') ?? 0;
    const rel = (at: number): string => `${((at - jumpedAt) / 1000).toFixed(1)} s`;
    const evidence = (): string[] => [
      `claim.1.json: claimed_ms ${claim.claimed_ms} (the owner's clock ${PROBE_MS} ms ahead of the host's), lease_ms ${claim.lease_ms}, RENEW_INTERVAL ${renew} ms`,
      `wall clock moved ${jumpMs > 0 ? '+' : ''}${jumpMs} ms at 0 s; command released at ${rel(releasedAt)}`,
      `state.1.json versions seen (time relative to the jump: heartbeat_ms): ${seen.map((s) => `${rel(s.at)}: ${s.heartbeat ?? 'invalid'}`).join(', ')}`,
      `consume: exit ${result.exitCode ?? result.signal}${result.timedOut ? ' (timed out)' : ''}; stderr ${JSON.stringify(result.stderr.slice(-600))}`,
      ...listing(snapshot, new Set([job.id])),
    ];
    const direction = jumpMs < 0 ? 'back' : 'ahead';
    // Renewals every RENEW_INTERVAL, from the first one seen until the case's last look before the
    // release (or the consumer's end: a look after it sees nothing new).
    const until = endedEarly ? endedAt : lookedAt;
    const renewals = seen.filter((s) => s.at <= until);
    let worst = { gap: 0, from: 0 };
    for (let i = 1; i < renewals.length; i++) {
      const gap = between(renewals[i - 1] as Seen, renewals[i] as Seen);
      if (gap > worst.gap) worst = { gap, from: (renewals[i - 1] as Seen).at };
    }
    const lastRenewal = renewals.at(-1);
    if (lastRenewal !== undefined && until - lastRenewal.at > worst.gap) worst = { gap: until - lastRenewal.at, from: lastRenewal.at };
    ctx.check(
      worst.gap <= renew + TOLERANCE_MS,
      ['LEASE-4', 'LEASE-1'],
      `after the owner's wall clock jumped an hour ${direction}, its renewals must go on every RENEW_INTERVAL (${renew} ms, + ${TOLERANCE_MS} ms tolerance), scheduled by monotonic time; state.1.json did not change for ${Math.round(worst.gap)} ms from ${rel(worst.from)}${endedEarly ? `, and the consumer ended at ${rel(endedAt)}, before the case released the command` : ''}`,
      evidence,
    );
    for (let i = 1; i < seen.length; i++) {
      const a = seen[i - 1] as Seen;
      const b = seen[i] as Seen;
      if (a.heartbeat === undefined || b.heartbeat === undefined) continue;
      const elapsed = between(a, b);
      const ok = ctx.check(
        b.heartbeat >= a.heartbeat + elapsed - TOLERANCE_MS,
        ['LEASE-4'],
        `an owner must never write a heartbeat_ms smaller than its previous renewal plus the monotonic time since: heartbeat_ms went from ${a.heartbeat} to ${b.heartbeat} (${b.heartbeat - a.heartbeat} ms) while ${Math.round(elapsed)} ms passed (${TOLERANCE_MS} ms tolerance), after its wall clock jumped an hour ${direction}: such a renewal looks stale to a judge`,
        evidence,
      );
      if (!ok) break;
    }
    const receipt = seenJob?.receipt;
    ctx.check(
      receipt?.outcome === 'succeeded' && receipt.exit_code === 0 && receipt.gen === 1 && starts === 1 && JSON.stringify(seenJob?.claims) === '[1]',
      jumpMs < 0 ? ['LEASE-4', 'LEASE-2', 'RETRY-2'] : ['LEASE-4', 'LEASE-2', 'EXEC-8'],
      `a wall clock that jumps an hour ${direction} must not stop the job (its lease and its timeout_ms ${TIMEOUT_MS} are measured on the monotonic clock): it must end once, succeeded, in generation 1; got ${JSON.stringify(receipt && { gen: receipt.gen, outcome: receipt.outcome, reason: receipt.reason, exit_code: receipt.exit_code })}, claims ${seenJob?.claims.join(',') ?? 'none'}, ${starts} starts`,
      evidence,
    );
    if (receipt !== undefined && typeof receipt.started_ms === 'number' && startSeenAt !== undefined && !endedEarly) {
      // Released by the owner before startSeenAt, ended after releasedAt: it ran at least this long.
      const ran = Math.round(releasedAt - startSeenAt);
      ctx.check(
        receipt.finished_ms >= receipt.started_ms + ran - TOLERANCE_MS,
        ['LEASE-4'],
        `an owner must write every instant of its generation no earlier than the last one it wrote plus the monotonic time since: the receipt says finished_ms ${receipt.finished_ms}, ${receipt.finished_ms - receipt.started_ms} ms after its started_ms ${receipt.started_ms}, but the command ran for at least ${ran} ms (${TOLERANCE_MS} ms tolerance) while the owner's wall clock jumped an hour ${direction}`,
        evidence,
      );
    }
    ctx.check(result.exitCode === 0 && !result.timedOut, ['MANIFEST-1'], 'consume must exit 0 once the job is done', evidence);
  } finally {
    await settle(run, release);
  }
}

/** The end of a case that holds a role's command on a release file: release it, give the role 30 s to end, then kill it. */
export async function settle(run: CrashRun, release: string): Promise<void> {
  await writeFile(release, '').catch(() => undefined);
  const ended = await Promise.race([run.result.then(() => true, () => true), sleep(30_000).then(() => false)]);
  if (!ended) run.kill();
  await run.result.catch(() => undefined);
}

export const clockCases: ConformanceCase[] = [
  { name: 'identity/owner-clock-back', clauses: ['LEASE-4', 'LEASE-1', 'LEASE-2', 'RETRY-2'], level: 'consumer', strength: 'MUST', heavy: true, idle: true, run: (ctx) => clockJumpCase(ctx, -HOUR) },
  { name: 'identity/owner-clock-ahead', clauses: ['LEASE-4', 'LEASE-1', 'LEASE-2', 'EXEC-8'], level: 'consumer', strength: 'MUST', heavy: true, idle: true, run: (ctx) => clockJumpCase(ctx, HOUR) },
];
