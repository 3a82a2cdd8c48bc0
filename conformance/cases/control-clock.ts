/**
 * The cases of spec/control.md whose times a consumer judges by its own
 * clocks, run with the consumer's wall clock moved by the crash injector
 * (crash/clock.ts): a retry is due by the wall clock or by a monotonic
 * watch (RETRY-4); a delayed start by the wall clock alone (DELAY-1).
 *
 * consumer/retry-clock-back (RETRY-4): "A judge MUST treat a job's current
 * end.<g>.json as due once now >= retry_at_ms, or once it has watched that
 * end record for retry_at_ms - ended_ms of its monotonic clock, whichever
 * comes first. A wall clock that jumps back therefore delays a retry by at
 * most the retry delay itself."
 *
 * The consume role runs under the crash injector with its wall clock an hour
 * behind the host's (crash/clock.ts): the job's generation 1 ended a moment
 * ago with a 5 s retry delay, so by the role's wall clock the retry is due in
 * an hour and 5 s; by its monotonic watch, in 5 s. A second job, runnable at
 * once, is the probe: its claim's claimed_ms shows whether the role sees the
 * injector's clock at all (a static binary or raw clock syscalls would not),
 * and the case skips with that reason rather than pass a judge it could not
 * move. The role gets RETRY_DELAY_MS + a minute: a judge that waits for its
 * wall clock (an hour) is stopped there and has not run the retry.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ClaimRecord } from '../../src/records/codec.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { claimRecord, deadOwner, endRecord, execRecord } from '../runner/fixtures.ts';
import { listing } from '../runner/inspect.ts';
import { freshQueue, plantRecord, stageJob } from '../runner/stage.ts';
import { logged } from './jobs.ts';
import { needsInjector } from '../runner/pause.ts';

const HOUR = 3_600_000;
const RETRY_DELAY_MS = 5000;
/** How far ahead of its creation consumer/delayed-clock-behind's job may start, by the host's clock. */
const DELAY_MS = 3000;
/** How far a probe's claimed_ms may be from the role's expected clock and still show the offset reached it. */
const PROBE_SLACK_MS = 10 * 60_000;

export async function readClaim(file: string): Promise<ClaimRecord | undefined> {
  return readFile(file, 'utf8').then((text) => JSON.parse(text) as ClaimRecord, () => undefined);
}

async function retryClockBackCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, 'to move the consumer\'s wall clock');
  const { root, work, log, queue } = await freshQueue(ctx, 'retry');
  const job = await stageJob(queue, { argv: logged(log, 'retried'), cwd: work, max_attempts: 2, retry_delay_ms: RETRY_DELAY_MS });
  const dead = await deadOwner();
  const now = Date.now();
  await plantRecord(queue, job.dir, 'claim.1.json', 'claim', claimRecord(job.id, 1, dead, now - 10_000));
  await plantRecord(queue, job.dir, 'exec.1.json', 'exec', execRecord(job.id, 1, dead));
  await plantRecord(queue, job.dir, 'end.1.json', 'end', { ...endRecord(job.id, 1), ended_ms: now, retry_at_ms: now + RETRY_DELAY_MS });
  const probe = await stageJob(queue, { argv: logged(log, 'probe'), cwd: work });

  const run = await ctx.startRoleInjected('consume', { queue: root }, { wallClockOffsetMs: -HOUR, timeoutMs: RETRY_DELAY_MS + 60_000 });
  const result = await run.result;
  const probed = await readClaim(path.join(probe.dir, 'claim.1.json'));
  if (probed !== undefined && Math.abs(probed.claimed_ms - (Date.now() - HOUR)) > PROBE_SLACK_MS) {
    ctx.skip(`the consumer does not see the injector's wall clock (its claim of the probe job says claimed_ms ${probed.claimed_ms}, the host's time, not an hour behind): it reads the clock without libc`);
  }
  const snapshot = await ctx.snapshot(root);
  const seen = snapshot.jobs.get(job.id);
  const starts = countBy(await readStarts(log));
  const receipt = seen?.receipt;
  ctx.check(
    (starts.get('retried') ?? 0) === 1 && receipt?.gen === 2 && receipt.outcome === 'succeeded',
    ['RETRY-4', 'RETRY-2'],
    `the consumer's wall clock is an hour behind: the retry of generation 1 (retry_delay_ms ${RETRY_DELAY_MS}) is due by its monotonic watch of end.1.json after ${RETRY_DELAY_MS} ms, and must run within the consume run (it had ${(RETRY_DELAY_MS + 60_000) / 1000} s); ${starts.get('retried') ?? 0} starts, receipt ${JSON.stringify(receipt && { gen: receipt.gen, outcome: receipt.outcome })}, consume ${result.timedOut ? 'stopped after its time limit' : `exit ${result.exitCode}`}`,
    [`probe claimed_ms ${probed?.claimed_ms ?? 'none'} (host now ${Date.now()})`, ...listing(snapshot, new Set([job.id]))],
  );
}

/**
 * consumer/delayed-clock-behind (DELAY-1): a delay is an instant the
 * producer chose ("not before 03:00"), judged by the consumer's wall clock
 * only; unlike a retry (RETRY-4) it may guard something, so no monotonic
 * watch makes it due early. The job was created now with not_before_ms 3 s
 * ahead, and the consumer's wall clock is an hour behind: by that clock the
 * start is an hour and 3 s away (past CONSUME_RETRY_WAIT), so consume exits
 * 0 without claiming it. A consumer that also watched the delay (3 s) on its
 * monotonic clock, as RETRY-4 does for retries, would start it. A probe job
 * runnable at once shows the role sees the injector's clock.
 */
async function delayedClockBehindCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, 'to move the consumer\'s wall clock');
  const { root, work, log, queue } = await freshQueue(ctx, 'delayed');
  const now = Date.now();
  const job = await stageJob(queue, { argv: logged(log, 'delayed'), cwd: work, not_before_ms: now + DELAY_MS });
  const probe = await stageJob(queue, { argv: logged(log, 'probe'), cwd: work });
  const run = await ctx.startRoleInjected('consume', { queue: root }, { wallClockOffsetMs: -HOUR, timeoutMs: DELAY_MS + 60_000 });
  const result = await run.result;
  const probed = await readClaim(path.join(probe.dir, 'claim.1.json'));
  if (probed !== undefined && Math.abs(probed.claimed_ms - (Date.now() - HOUR)) > PROBE_SLACK_MS) {
    ctx.skip(`the consumer does not see the injector's wall clock (its claim of the probe job says claimed_ms ${probed.claimed_ms}, the host's time, not an hour behind): it reads the clock without libc`);
  }
  const snapshot = await ctx.snapshot(root);
  const claimed = await readClaim(path.join(job.dir, 'claim.1.json'));
  const starts = countBy(await readStarts(log)).get('delayed') ?? 0;
  const evidence = [`not_before_ms ${now + DELAY_MS}; consume ${result.timedOut ? 'stopped after its time limit' : `exit ${result.exitCode}`}; probe claimed_ms ${probed?.claimed_ms ?? 'none'} (host now ${Date.now()})`, ...listing(snapshot, new Set([job.id]))];
  ctx.check(
    claimed === undefined && starts === 0,
    ['DELAY-1'],
    `the consumer's wall clock is an hour behind, so by it not_before_ms is an hour and ${DELAY_MS / 1000} s away: the job must not be claimed, however long the consumer watched it (a delay is judged by the wall clock alone); claim.1.json ${claimed === undefined ? 'absent' : `at claimed_ms ${claimed.claimed_ms}`}, ${starts} starts`,
    evidence,
  );
  ctx.check(!result.timedOut && result.exitCode === 0, ['MANIFEST-4', 'DELAY-1'], 'consume must exit 0 when only a job delayed past CONSUME_RETRY_WAIT (by its clock) remains', evidence);
}

export const controlClockCases: ConformanceCase[] = [
  { name: 'consumer/retry-clock-back', clauses: ['RETRY-4', 'RETRY-2'], level: 'consumer', strength: 'MUST', run: retryClockBackCase },
  { name: 'consumer/delayed-clock-behind', clauses: ['DELAY-1', 'MANIFEST-4'], level: 'consumer', strength: 'MUST', run: delayedClockBehindCase },
];
