/**
 * Reliability battery: wall-clock jumps against leases (issue 6; LEASE-3,
 * LEASE-4, ID-6, ID-7). Clocks are jumped through the Clock seam of real
 * in-process workers and recoverers; another host's judge is a real `fsjob
 * recover` with FSJOB_HOST_OVERRIDE (another boot id: it judges by lease only).
 *
 * - forward, same host: a live owner is judged by pid and start, never by a
 *   clock: nobody breaks its claim;
 * - backward, owner: renewals go on and never look stale to another host;
 * - backward or future-stamped renewal, judge: a dead foreign owner is
 *   recovered after lease + guardian limit + skew of monotonic time, not
 *   after the jump;
 * - forward, judge: a foreign owner seen renewing is not judged dead (its
 *   claim and renewals are written by the test through the core primitives:
 *   a real foreign worker's command would run on this machine, and the
 *   process table would protect it whatever the lease said, ID-8).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { enqueue } from '../../src/producer/index.ts';
import { recover, Worker } from '../../src/consumer/index.ts';
import { systemClock, type Clock } from '../../src/base/clock.ts';
import { selfIdentity } from '../../src/model/identity.ts';
import type { Queue } from '../../src/model/queue.ts';
import type { StateRecord } from '../../src/records/codec.ts';
import { auditQueue } from '../../src/validator/queue.ts';
import { cleanupAll } from '../support/helpers.ts';
import { delay, publishClaim, receiptOf, waitFor } from '../support/consumer.ts';
import { assertNoCrash, fsjobSpawn, queueAndCwd } from '../support/faults.ts';
import { PROTOCOL_VERSION } from '../../src/base/constants.ts';
import { encodeRecord } from '../../src/records/codec.ts';
import { publishRecord } from '../../src/fs/safefs.ts';

const DAY = 86_400_000;
const FOREIGN = { FSJOB_HOST_OVERRIDE: 'elsewhere/0b5e7c1e-0000-4000-8000-000000000001' };

/** A wall clock the test can jump; its monotonic clock is the real one. */
function jumpingClock(): { clock: Clock; jump: (ms: number) => void } {
  let offset = 0;
  return {
    clock: { nowMs: () => Date.now() + offset, sleep: systemClock.sleep, monotonicMs: () => performance.now() },
    jump: (ms) => void (offset += ms),
  };
}

/**
 * The real wall clock with a monotonic clock that runs `speed` times as fast,
 * so a judge's watch of lease + GUARDIAN_LIMIT + LEASE_SKEW (LEASE-4) passes
 * without the test waiting all of it.
 */
function fastMonotonicClock(speed: number): Clock {
  const origin = performance.now();
  return { nowMs: () => Date.now(), sleep: systemClock.sleep, monotonicMs: () => origin + (performance.now() - origin) * speed };
}

/** A job that runs until the test creates its gate file. */
async function gatedJob(queue: Queue, cwd: string): Promise<{ id: string; open: () => void }> {
  const gate = join(cwd, `gate-${Math.random().toString(16).slice(2)}`);
  const { id } = await enqueue(queue, { argv: ['sh', '-c', `while [ ! -e ${gate} ]; do sleep 0.05; done`] }, { cwd });
  return { id, open: () => writeFileSync(gate, '') };
}

function heartbeatOf(queue: Queue, id: string, gen = 1): number | undefined {
  try {
    return (JSON.parse(readFileSync(queue.paths.jobFile(id, `state.${gen}.json`), 'utf8')) as StateRecord).heartbeat_ms;
  } catch {
    return undefined;
  }
}

/** The next `count` distinct heartbeats written after now. */
async function nextHeartbeats(queue: Queue, id: string, count: number): Promise<number[]> {
  const seen: number[] = [];
  let last = heartbeatOf(queue, id);
  while (seen.length < count) {
    const beat = await waitFor('a lease renewal', () => {
      const now = heartbeatOf(queue, id);
      return now !== undefined && now !== last ? now : undefined;
    });
    seen.push(beat);
    last = beat;
  }
  return seen;
}

function claimedMsOf(queue: Queue, id: string, gen = 1): number {
  return (JSON.parse(readFileSync(queue.paths.jobFile(id, `claim.${gen}.json`), 'utf8')) as { claimed_ms: number }).claimed_ms;
}

const clocks = suite('clock jumps and leases');
clocks.after(cleanupAll);

clocks('forward, same host: a live owner is judged by pid and start; recover, a worker and validate a day ahead leave its claim alone (ID-6)', async () => {
  const { queue, cwd } = await queueAndCwd('fsjob-clock-fwd');
  const job = await gatedJob(queue, cwd);
  const owner = new Worker({ queues: [queue], mode: 'serve', pollMs: 100 });
  const served = owner.run();
  try {
    await waitFor('the job to start', () => existsSync(queue.paths.jobFile(job.id, 'exec.1.json')));
    const ahead = jumpingClock();
    ahead.jump(DAY);
    const report = await recover(queue, { clock: ahead.clock });
    assert.equal(report.claimsBroken, [], 'recover a day ahead breaks no live claim');
    const rival = await new Worker({ queues: [queue], mode: 'drain', pollMs: 100, clock: ahead.clock }).run();
    assert.is(rival.claimed, 0, 'a worker a day ahead claims nothing');
    const audit = await auditQueue(queue.root, { now: () => Date.now() + DAY });
    assert.equal(audit.findings.filter((finding) => finding.severity !== 'info').map((finding) => finding.code), [], 'validate a day ahead sees no orphan');
    job.open();
    await waitFor('the receipt', () => existsSync(queue.paths.jobFile(job.id, 'receipt.json')));
  } finally {
    owner.stop();
    await served;
  }
  assert.is(receiptOf(queue, job.id).gen, 1, 'finished by its first owner');
  assert.is(receiptOf(queue, job.id).outcome, 'succeeded');
});

clocks("backward, owner: renewals go on, heartbeats never go back, another host's judge finds the lease valid, and the receipt does not finish before it started (LEASE-4)", async () => {
  const { queue, cwd } = await queueAndCwd('fsjob-clock-back');
  const job = await gatedJob(queue, cwd);
  const skewed = jumpingClock();
  const owner = new Worker({ queues: [queue], mode: 'serve', pollMs: 100, leaseMs: 3000, clock: skewed.clock });
  const served = owner.run();
  try {
    await waitFor('the job to start', () => existsSync(queue.paths.jobFile(job.id, 'exec.1.json')));
    const before = (await nextHeartbeats(queue, job.id, 1))[0] as number;
    skewed.jump(-DAY);
    const after = await nextHeartbeats(queue, job.id, 2);
    assert.ok(after.every((beat) => beat > before), `heartbeats after the jump (${after.join(', ')}) come after the one before it (${before})`);
    assert.ok((after[1] as number) > (after[0] as number), 'and keep increasing');
    // Not spawnSync: the owner renews from this process's event loop.
    const judge = await fsjobSpawn(['recover', '--queue', queue.root], { env: FOREIGN }).done;
    assertNoCrash(judge, 'fsjob recover on another host');
    assert.is(judge.status, 0, judge.stderr);
    assert.not.ok(existsSync(queue.paths.jobFile(job.id, 'claim.2.json')), 'the claim of the live owner was not broken');
    job.open();
    await waitFor('the receipt', () => existsSync(queue.paths.jobFile(job.id, 'receipt.json')));
  } finally {
    owner.stop();
    await served;
  }
  const receipt = receiptOf(queue, job.id);
  assert.is(receipt.gen, 1);
  // Issue 28 point 4: every instant the owner writes runs forwards, as its heartbeats do.
  assert.ok(receipt.started_ms !== null && receipt.finished_ms >= receipt.started_ms, `finished_ms ${receipt.finished_ms} is not before started_ms ${String(receipt.started_ms)} after the clock went back a day`);
  const audit = await auditQueue(queue.root, { now: () => Date.now() - DAY });
  assert.equal(audit.findings.filter((finding) => finding.code === 'RECEIPT_TIME_ORDER'), [], 'validate sees no receipt that finished before it started');
});

clocks('backward, judge: a dead foreign owner whose renewal is stamped a day ahead is recovered after lease + guardian limit + skew of monotonic time (LEASE-4)', async () => {
  const { queue, cwd } = await queueAndCwd('fsjob-clock-future');
  const { id } = await enqueue(queue, { argv: ['true'] }, { cwd });
  const foreign = { ...(await selfIdentity()), host: 'elsewhere', boot_id: 'a-boot-that-is-not-ours' };
  await publishClaim(queue, id, 1, foreign, Date.now() + DAY, 3000); // by a host a day ahead, which then died
  const once = await recover(queue);
  assert.equal(once.claimsBroken, [], 'a one-shot judge has watched nothing: LEASE-3 on its wall clock keeps the claim');
  // 18 s of the watcher's monotonic time (3 s lease + guardian limit + skew) pass in 6 s.
  const watcher = new Worker({ queues: [queue], mode: 'serve', pollMs: 200, clock: fastMonotonicClock(3) });
  const served = watcher.run();
  try {
    await waitFor('the recovery', () => existsSync(queue.paths.jobFile(id, 'receipt.json')), 90_000);
  } finally {
    watcher.stop();
    await served;
  }
  const receipt = receiptOf(queue, id);
  assert.is(receipt.gen, 2, 'recovered once, by a new generation');
  assert.is(receipt.outcome, 'succeeded', 'the dead owner never executed it, so it runs');
  assert.ok(receipt.finished_ms < claimedMsOf(queue, id, 1), 'long before the stamped renewal would have expired');
});

clocks("forward, judge: a foreign owner seen renewing keeps its claim when the judge's clock jumps a day ahead (LEASE-4)", async () => {
  const { queue, cwd } = await queueAndCwd('fsjob-clock-judge');
  const { id } = await enqueue(queue, { argv: ['true'] }, { cwd });
  // The foreign owner: its claim, renewed every 500 ms through the core primitive (as its host would).
  const foreign = { ...(await selfIdentity()), host: 'elsewhere', boot_id: 'a-boot-that-is-not-ours' };
  await publishClaim(queue, id, 1, foreign, Date.now(), 3000);
  const renew = async (): Promise<void> => {
    const state: StateRecord = { fsjob: PROTOCOL_VERSION, type: 'state', job_id: id, gen: 1, phase: 'claimed', heartbeat_ms: Date.now(), attempt: null, stdout_bytes: 0, stderr_bytes: 0, progress: null };
    await publishRecord(queue.paths.job(id), 'state.1.json', encodeRecord('state', state), 'rename', queue.fsOptions);
  };
  await renew();
  const renewer = setInterval(() => void renew(), 500);
  const skewed = jumpingClock();
  const judge = new Worker({ queues: [queue], mode: 'serve', pollMs: 100, clock: skewed.clock });
  const served = judge.run();
  try {
    await nextHeartbeats(queue, id, 3); // the judge's scans see the renewal change
    skewed.jump(DAY);
    await delay(1500); // several scans with the clock a day ahead
    assert.not.ok(existsSync(queue.paths.jobFile(id, 'claim.2.json')), 'the live foreign claim was not broken');
  } finally {
    clearInterval(renewer);
    judge.stop();
    await served;
  }
});

clocks.run();
