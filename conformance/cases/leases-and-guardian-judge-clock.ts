/**
 * identity/judge-clock-back (LEASE-3, LEASE-4; issue 28 point 2): a judge
 * whose wall clock goes back still breaks a dead foreign claim after its
 * monotonic watch. LEASE-3 watches the renewal on the judge's monotonic
 * clock, so nothing the judge does about a foreign claim may wait on its
 * wall clock: a consumer that put the claim aside "until now + 1 s" by the
 * wall clock, and then saw that clock go back an hour, skipped the claim for
 * an hour.
 *
 * The consume role runs under the crash injector (crash/clock.ts) with its
 * wall clock PROBE_MS behind the host's. The queue holds, in this order:
 *
 * - the victim, whose claim.1.json names an owner on another host, claimed
 *   now (by the role's clock, PROBE_MS in the future): a live owner at first
 *   sight, never renewed again, so dead once watched for lease_ms +
 *   GUARDIAN_LIMIT + LEASE_SKEW;
 * - the holder, a command the role runs until the case releases it: it keeps
 *   the one-shot role running past the watch, and its claim's claimed_ms
 *   shows whether the role sees the injector's clock at all (else the case
 *   skips, as identity/owner-clock-back does).
 *
 * Once the holder runs, the case moves the role's wall clock an hour back,
 * waits out the victim's watch (counted from the holder's claim, which came
 * after the role's first look at the victim) plus TOLERANCE_MS, and releases
 * the holder. The role must then break the victim's claim and run it
 * (claim.2.json, one start) before it exits: from its first look, the claim
 * has stayed unchanged longer than the watch on its monotonic clock.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { GUARDIAN_LIMIT, LEASE_MIN, LEASE_SKEW } from '../../src/base/constants.ts';
import { selfIdentity } from '../../src/model/identity.ts';
import type { ClaimRecord } from '../../src/records/codec.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { claimRecord, foreignOwner } from '../runner/fixtures.ts';
import { listing } from '../runner/inspect.ts';
import { needsInjector } from '../runner/pause.ts';
import { sleep } from '../runner/process.ts';
import { plantRecord, reopen, stageJob } from '../runner/stage.ts';
import { settle } from './leases-and-guardian-clock.ts';
import { readClaim } from './control-clock.ts';
import { logged } from './jobs.ts';

const HOUR = 3_600_000;
/** How far behind the host's the role's wall clock starts: the victim's claim then reads as renewed in the future, alive. */
const PROBE_MS = 10 * 60_000;
/** Scheduling tolerance on a loaded 2-core machine, added to every bound the spec states. */
const TOLERANCE_MS = 5000;
const POLL_MS = 100;

async function judgeClockBackCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, "to move the judge's wall clock");
  const root = await ctx.newQueue('judge-clock');
  const work = await ctx.subdir('judge-clock/work');
  const log = path.join(work, 'starts.log');
  const release = path.join(work, 'release');
  const queue = await reopen(root);
  const victim = await stageJob(queue, { argv: logged(log, 'victim'), cwd: work, max_attempts: 1 });
  await plantRecord(queue, victim.dir, 'claim.1.json', 'claim', claimRecord(victim.id, 1, foreignOwner(await selfIdentity()), Date.now() - PROBE_MS, LEASE_MIN));
  // Bounded, so a forgotten holder does not live on.
  const holder = await stageJob(queue, { argv: logged(log, 'holder', 'i=0; while [ ! -e "$3" ] && [ "$i" -lt 3000 ]; do sleep 0.2; i=$((i + 1)); done', release), cwd: work });
  const watchMs = LEASE_MIN + GUARDIAN_LIMIT + LEASE_SKEW;
  const run = await ctx.startRoleInjected('consume', { queue: root }, { wallClockOffsetMs: -PROBE_MS, timeoutMs: watchMs + 120_000 });
  let ended = false;
  void run.result.then(() => (ended = true), () => (ended = true));
  try {
    let claim: ClaimRecord | undefined;
    const giveUp = performance.now() + 60_000;
    while ((claim = await readClaim(path.join(holder.dir, 'claim.1.json'))) === undefined && !ended && performance.now() < giveUp) await sleep(POLL_MS);
    if (claim === undefined) {
      run.kill();
      const result = await run.result;
      ctx.fail(['CLAIM-1', 'MANIFEST-4'], 'the consumer never claimed the holder job, so the case could not move its clock while it judged the victim', [`consume exited ${result.exitCode ?? result.signal}: ${result.stderr.slice(-400)}`, ...listing(await ctx.snapshot(root))]);
      return;
    }
    const claimedAt = performance.now();
    if (Math.abs(claim.claimed_ms - (Date.now() - PROBE_MS)) > PROBE_MS / 2) {
      ctx.skip(`the consumer does not see the injector's wall clock (the holder's claimed_ms ${claim.claimed_ms} is not ${PROBE_MS} ms behind the host's ${Date.now()}): it reads the clock without libc`);
    }
    run.setWallClockOffset(-HOUR);
    while (!ended && performance.now() - claimedAt < watchMs + TOLERANCE_MS) await sleep(POLL_MS);
    await writeFile(release, '');
    const result = await run.result;
    const snapshot = await ctx.snapshot(root);
    const seen = snapshot.jobs.get(victim.id);
    const starts = countBy(await readStarts(log));
    ctx.check(
      JSON.stringify(seen?.claims) === '[1,2]' && starts.get('victim') === 1,
      ['LEASE-3', 'LEASE-4'],
      `a foreign claim that stayed unchanged for more than lease_ms + GUARDIAN_LIMIT + LEASE_SKEW (${watchMs} ms) of the judge's monotonic clock is dead however the judge's wall clock moved: the consumer, whose wall clock went back an hour after its first look at the claim, must break it and run the job before it exits; claims ${seen?.claims.join(',') ?? 'none'}, ${starts.get('victim') ?? 0} starts of the victim, consume ${result.timedOut ? 'stopped after its time limit' : `exit ${result.exitCode ?? result.signal}`}`,
      [`holder claimed_ms ${claim.claimed_ms}; the case released it ${Math.round(performance.now() - claimedAt)} ms after it saw that claim`, ...listing(snapshot, new Set([victim.id]))],
    );
  } finally {
    await settle(run, release);
  }
}

export const judgeClockCases: ConformanceCase[] = [
  { name: 'identity/judge-clock-back', clauses: ['LEASE-3', 'LEASE-4'], level: 'consumer', strength: 'MUST', idle: true, run: judgeClockBackCase },
];
