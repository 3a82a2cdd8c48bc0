/**
 * An owner while its command runs, and what happens to that command when the
 * owner loses the job (CLAIM-7, OWN-1), dies (WORKER-2) or is told to stop
 * (WORKER-3). The command is a probe (probes.ts) that ignores SIGTERM where
 * only SIGKILL may stop it; the runner watches its process group in /proc.
 *
 * - `ownership/superseded`: while the job runs, the owner's identity is
 *   checked against /proc (ID-1..ID-4, EXEC-3), its first renewal is awaited
 *   (LEASE-1: by claimed_ms + lease_ms / 3), and, when it names a worker, its
 *   registration (WORKER-1); then the runner publishes claim.2.json for a
 *   live owner of its own: the first owner must stop its execution at once
 *   (SIGKILL) and publish nothing more for the job.
 * - `ownership/guardian`: the consumer is SIGKILLed while its command runs;
 *   the command must be stopped within GUARDIAN_LIMIT (WORKER-2), and
 *   recovery then ends the job `lost` (RECOV-1 step 3).
 * - `ownership/shutdown`: SIGTERM to the consumer (WORKER-3): it claims
 *   nothing more, lets a running attempt that ends within CANCEL_GRACE finish,
 *   stops one that does not after CANCEL_GRACE and ends its generation
 *   `shutdown`, then exits 0.
 */
import { existsSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CANCEL_GRACE, CONTROL_LATENCY, GUARDIAN_LIMIT, renewInterval } from '../../src/base/constants.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { claimRecord, ownerOf, sleeper } from '../runner/fixtures.ts';
import { checkInvariants, listing } from '../runner/inspect.ts';
import { describeExit, type ProcessResult, type Spawned } from '../runner/process.ts';
import { plantRecord, reopen } from '../runner/stage.ts';
import { logged } from './jobs.ts';
import { consumerExit, recordAt, startRunning, type Running } from './running.ts';
import { bound, groupLives, killGroupNow, procStat, probe, readProbeLog, SCHEDULING_TOLERANCE_MS, waitFor } from './probes.ts';

/** Renewal intervals longer than this are not waited for (the case says so). */
const RENEW_WAIT_MAX_MS = 30_000;

/** ID-1..ID-4 and EXEC-3: the identities the owner wrote describe real processes of this host. */
function checkIdentities(ctx: CaseContext, run: Running, probePid: number | undefined, evidence: () => string[]): void {
  const owner = run.claim.owner;
  const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  const pidNs = readlinkSync('/proc/self/ns/pid');
  ctx.check(owner.boot_id === bootId, ['ID-3'], `claim.1.json's owner boot_id is ${JSON.stringify(owner.boot_id)}; this host's /proc/sys/kernel/random/boot_id is ${bootId}`, evidence);
  ctx.check(owner.pid_ns === pidNs, ['ID-4'], `claim.1.json's owner pid_ns is ${JSON.stringify(owner.pid_ns)}; readlink /proc/self/ns/pid is ${pidNs}`, evidence);
  ctx.check(owner.host === os.hostname() && owner.uid === process.geteuid?.(), ['ID-1'], `claim.1.json's owner host/uid are ${JSON.stringify(owner.host)}/${owner.uid}; uname -n and the effective uid are ${os.hostname()}/${process.geteuid?.()}`, evidence);
  const st = procStat(owner.pid);
  ctx.check(st !== undefined && st.start === owner.start, ['ID-2', 'ID-6'], `claim.1.json names owner pid ${owner.pid} with start ${owner.start}; /proc/${owner.pid}/stat field 22 is ${st?.start ?? '(no such process)'} while it runs the job`, evidence);
  const group = run.exec.group;
  if (group === null) return;
  const leader = procStat(group.pgid);
  ctx.check(leader !== undefined && leader.start === group.start && group.boot_id === bootId && group.pid_ns === pidNs, ['EXEC-3', 'ID-2'], `exec.1.json records group ${group.pgid} with leader start ${group.start}; /proc says ${leader === undefined ? 'no such process' : `start ${leader.start}`}`, evidence);
  const probeGroup = probePid === undefined ? undefined : procStat(probePid)?.pgrp;
  ctx.check(probeGroup === group.pgid, ['EXEC-3', 'EXEC-2'], `the command runs in process group ${probeGroup}, but exec.1.json records group ${group.pgid}`, evidence);
}

/** LEASE-1: a state.1.json with a newer heartbeat_ms by claimed_ms + lease_ms / 3 (+ tolerance). */
async function awaitRenewal(ctx: CaseContext, run: Running, evidence: () => string[]): Promise<void> {
  const interval = renewInterval(run.claim.lease_ms);
  if (interval > RENEW_WAIT_MAX_MS) {
    ctx.note(`lease ${run.claim.lease_ms} ms: its renewal interval (${interval} ms) is longer than this case waits; LEASE-1 not observed`);
    return;
  }
  const due = run.claim.claimed_ms + interval + SCHEDULING_TOLERANCE_MS;
  let heartbeat: number | undefined;
  const renewed = await waitFor(async () => {
    const state = await recordAt(path.join(run.jobDir, 'state.1.json'), 'state', run.id);
    if (state !== undefined && state.gen === 1 && state.heartbeat_ms > run.claim.claimed_ms) heartbeat = state.heartbeat_ms;
    return heartbeat !== undefined;
  }, Math.max(0, due - Date.now()), 100);
  ctx.check(renewed, ['LEASE-1'], `no renewal of claim 1 (claimed_ms ${run.claim.claimed_ms}, lease_ms ${run.claim.lease_ms}) by ${bound('claimed_ms + RENEW_INTERVAL (lease_ms / 3)', interval)}: the owner renews by publishing state.1.json with a newer heartbeat_ms at least every RENEW_INTERVAL`, evidence);
  const worker = run.claim.worker_id;
  if (worker === null) return;
  const registration = await recordAt(path.join(path.dirname(path.dirname(run.jobDir)), 'workers', `${worker}.json`), 'worker');
  const age = registration === undefined ? undefined : Date.now() - registration.heartbeat_ms;
  const limit = registration === undefined ? 0 : renewInterval(registration.lease_ms) + SCHEDULING_TOLERANCE_MS;
  ctx.check(registration !== undefined && age !== undefined && age <= limit, ['WORKER-1'], registration === undefined ? `claim.1.json names worker ${worker}, but workers/${worker}.json is missing or invalid while the worker runs the job` : `workers/${worker}.json was last renewed ${age} ms ago: a registration is renewed every RENEW_INTERVAL (${renewInterval(registration.lease_ms)} ms + ${SCHEDULING_TOLERANCE_MS} ms tolerance)`, evidence);
}

function fileStamp(file: string): string {
  try {
    const st = statSync(file);
    return `${st.ino}:${st.mtimeMs}:${st.size}`;
  } catch {
    return 'missing';
  }
}

async function supersededCase(ctx: CaseContext): Promise<void> {
  const queue = await ctx.newQueue('superseded');
  const work = await ctx.subdir('superseded/work');
  const log = path.join(work, 'probe.log');
  const run = await startRunning(ctx, queue, { argv: probe(log, 'owner', { onTerm: 'ignore' }), cwd: work, timeout_ms: 300_000, kill_grace_ms: 1000 }, 'owner', log);
  if (run === undefined) return;
  const newOwner = await sleeper();
  try {
    let snap = await ctx.snapshot(queue);
    const evidence = (): string[] => listing(snap, new Set([run.id]));
    checkIdentities(ctx, run, (await readProbeLog(log)).pid('owner'), evidence);
    await awaitRenewal(ctx, run, evidence);
    // The supersession: a live owner of the runner's takes generation 2.
    await plantRecord(await reopen(queue), run.jobDir, 'claim.2.json', 'claim', claimRecord(run.id, 2, await ownerOf(newOwner.pid, newOwner.start), Date.now(), 30_000));
    const superseded = Date.now();
    const limit = CONTROL_LATENCY + SCHEDULING_TOLERANCE_MS;
    const stopped = await waitFor(() => !groupLives(run.pgid), limit, 20);
    const stoppedAfter = Date.now() - superseded;
    snap = await ctx.snapshot(queue);
    const state = fileStamp(path.join(run.jobDir, 'state.1.json'));
    if (!stopped) {
      ctx.fail(['OWN-1', 'CLAIM-7'], `claim.2.json superseded the owner of generation 1, but its execution (group ${run.pgid}, ignoring SIGTERM) still ran ${stoppedAfter} ms later: a superseded owner stops its execution at once with SIGKILL (allowed: ${bound('CONTROL_LATENCY', CONTROL_LATENCY)})`, evidence());
      killGroupNow(run.pgid);
    }
    const done = await consumerExit(ctx, run.consumer, ['OWN-1']);
    const snapshot = await ctx.snapshot(queue);
    const job = snapshot.jobs.get(run.id);
    const late = [job?.receipt !== undefined || job?.receiptFindings.length !== 0 ? 'receipt.json' : '', job?.ends.includes(1) === true ? 'end.1.json' : '', fileStamp(path.join(run.jobDir, 'state.1.json')) !== state ? 'state.1.json (renewed again)' : ''].filter((n) => n !== '');
    const after = [describeExit(done), ...listing(snapshot, new Set([run.id]))];
    ctx.check(late.length === 0, ['CLAIM-7', 'OWN-1'], `the superseded owner of generation 1 published ${late.join(', ')} after claim.2.json appeared: it must publish nothing more for the job`, after);
    ctx.check(JSON.stringify(job?.claims) === '[1,2]', ['CLAIM-3', 'I2'], `claim 2 belongs to a live owner and must stay the job's open claim; claims are ${job?.claims.join(',')}`, after);
    const worker = run.claim.worker_id;
    if (worker !== null && done.code === 0) ctx.check(!existsSync(path.join(queue, 'workers', `${worker}.json`)), ['WORKER-1'], `the worker exited cleanly but left workers/${worker}.json behind`, after);
  } finally {
    run.consumer.kill();
    killGroupNow(groupLives(run.pgid) ? run.pgid : undefined);
    await newOwner.stop();
  }
}

async function guardianCase(ctx: CaseContext): Promise<void> {
  const queue = await ctx.newQueue('guardian');
  const work = await ctx.subdir('guardian/work');
  const log = path.join(work, 'probe.log');
  // The gate opens once the first run is stopped: a run the recovery should never start ends at once.
  const gate = path.join(work, 'gate');
  const run = await startRunning(ctx, queue, { argv: probe(log, 'orphan', { onTerm: 'ignore', gate }), cwd: work, timeout_ms: 300_000, kill_grace_ms: 1000 }, 'orphan', log);
  if (run === undefined) return;
  try {
    // A crash of the consumer: SIGKILL to its whole process group (the command runs in its own).
    run.consumer.kill();
    const killed = Date.now();
    const limit = GUARDIAN_LIMIT + SCHEDULING_TOLERANCE_MS;
    const stopped = await waitFor(() => !groupLives(run.pgid), limit, 50);
    const took = Date.now() - killed;
    await run.consumer.done;
    if (!stopped) {
      ctx.fail(['WORKER-2'], `the consumer was SIGKILLed while its command ran; the command (group ${run.pgid}, ignoring SIGTERM) still ran ${took} ms later: commands of a dead consumer are stopped within ${bound('GUARDIAN_LIMIT', GUARDIAN_LIMIT)}`, listing(await ctx.snapshot(queue), new Set([run.id])));
      killGroupNow(run.pgid);
      await waitFor(() => !groupLives(run.pgid), 5000);
    }
    writeFileSync(gate, '');
    // Recovery ends the dead attempt: max_attempts 1, so the job is lost (RECOV-1 step 3).
    const runs: ProcessResult[] = [];
    if (ctx.impl.roles.recover !== undefined) runs.push(await ctx.role('recover', { queue }));
    runs.push(await ctx.role('consume', { queue }));
    const snapshot = await ctx.snapshot(queue);
    const receipt = snapshot.jobs.get(run.id)?.receipt;
    const evidence = [...runs.map(describeExit), ...listing(snapshot, new Set([run.id]))];
    // Whether it ran again first: that is the cause a wrong receipt would follow from.
    const starts = countBy(await readStarts(log)).get('orphan') ?? 0;
    ctx.check(starts === 1, ['RETRY-2', 'I2'], `a job with max_attempts 1 whose attempt died with its owner must never start again; it started ${starts} times`, evidence);
    ctx.check(receipt?.outcome === 'lost' && receipt.exit_code === 125 && receipt.reason === 'owner_lost', ['RECOV-1', 'CLAIM-6', 'EXEC-10'], `the only attempt died with its owner: recovery publishes a lost receipt (125, owner_lost); got ${receipt === undefined ? 'no receipt' : `${receipt.outcome} (${receipt.exit_code}, ${receipt.reason})`}`, evidence);
    if (receipt?.outcome === 'lost') ctx.check(receipt.stdout?.gen === 1 && receipt.stdout.bytes_total === null && receipt.stderr?.bytes_total === null, ['RECOV-1', 'RCPT-5'], `a lost receipt describes the dead generation's files with bytes_total null; got stdout ${JSON.stringify(receipt.stdout)}`, evidence);
    for (const failure of await checkInvariants(snapshot, { accepted: [run.id] })) ctx.failures.push(failure);
  } finally {
    killGroupNow(groupLives(run.pgid) ? run.pgid : undefined);
  }
}

interface ShutdownFlow {
  label: string;
  /** The running attempt ends on its own this long after the SIGTERM; undefined: never. */
  endsAfterMs?: number;
}

async function shutdownFlow(ctx: CaseContext, flow: ShutdownFlow): Promise<{ failures: typeof ctx.failures }> {
  const failures: typeof ctx.failures = [];
  const fail = (clauses: string[], message: string, evidence: string[]): void => void failures.push({ clauses, message, evidence });
  const queue = await ctx.newQueue(flow.label);
  const work = await ctx.subdir(`${flow.label}/work`);
  const log = path.join(work, 'probe.log');
  const gate = path.join(work, 'gate');
  const runReq = { argv: probe(log, 'running', { gate }), cwd: work, timeout_ms: 300_000, kill_grace_ms: 1000, max_attempts: 2 };
  const idQueued = await ctx.produceOk(queue, { argv: logged(log, 'queued'), cwd: work }, ['ENQ-4']);
  // The running job is produced second but first in order: priority 1.
  const run = await startRunning(ctx, queue, { ...runReq, priority: 1 }, 'running', log);
  if (run === undefined || idQueued === undefined) return { failures };
  try {
    process.kill(run.consumer.pid, 'SIGTERM');
    const signalled = Date.now();
    let stoppedAt: number | undefined;
    let stoppedEarly = false;
    if (flow.endsAfterMs !== undefined) {
      // Stopped before the attempt could end on its own? Then let it end.
      stoppedEarly = await waitFor(() => !groupLives(run.pgid), flow.endsAfterMs, 20);
      if (!stoppedEarly) writeFileSync(gate, '');
    }
    const limit = CANCEL_GRACE + 1000 + 2 * SCHEDULING_TOLERANCE_MS;
    await waitFor(() => !groupLives(run.pgid), Math.max(0, signalled + limit - Date.now()), 20);
    stoppedAt = groupLives(run.pgid) ? undefined : Date.now();
    const done = await consumerExit(ctx, run.consumer, ['WORKER-3']);
    const probes = await readProbeLog(log);
    const snapshot = await ctx.snapshot(queue);
    const job = snapshot.jobs.get(run.id);
    const evidence = [describeExit(done), ...probes.lines.slice(0, 8).map((l) => `probe: ${l}`), ...listing(snapshot)];
    const term = probes.terms('running')[0];
    if (probes.starts('queued') > 0 || (snapshot.jobs.get(idQueued)?.claims.length ?? 0) > 0) fail(['WORKER-3'], 'after SIGTERM the consumer claimed (or ran) another job: on SIGTERM a consumer stops claiming', evidence);
    if (flow.endsAfterMs !== undefined) {
      if (term !== undefined || stoppedEarly) fail(['WORKER-3'], `the running attempt was stopped ${term === undefined ? `within ${flow.endsAfterMs} ms` : `${term - signalled} ms`} after SIGTERM; the consumer must let it end on its own for up to CANCEL_GRACE (${CANCEL_GRACE} ms)`, evidence);
      else if (job?.receipt?.outcome !== 'succeeded') fail(['WORKER-3'], `an attempt that ended on its own within CANCEL_GRACE after SIGTERM finishes as usual (succeeded); got ${job?.receipt?.outcome ?? 'no receipt'}`, evidence);
    } else {
      const at = term ?? stoppedAt;
      if (at === undefined) fail(['WORKER-3'], `the running attempt (group ${run.pgid}) still ran ${Date.now() - signalled} ms after SIGTERM: after CANCEL_GRACE (${CANCEL_GRACE} ms) the consumer stops it (SIGTERM, SIGKILL after kill_grace_ms 1000 ms; + ${2 * SCHEDULING_TOLERANCE_MS} ms tolerance)`, evidence);
      else if (at - signalled < CANCEL_GRACE - SCHEDULING_TOLERANCE_MS) fail(['WORKER-3'], `the running attempt was stopped ${at - signalled} ms after SIGTERM: the consumer waits up to CANCEL_GRACE (${CANCEL_GRACE} ms, less ${SCHEDULING_TOLERANCE_MS} ms tolerance) for it to end on its own`, evidence);
      else if (term === undefined) fail(['WORKER-3'], 'the running attempt was killed without SIGTERM first: a shutdown stops each group with SIGTERM, then SIGKILL after kill_grace_ms', evidence);
      const end = job?.ends.includes(1) === true ? await recordAt(path.join(run.jobDir, 'end.1.json'), 'end', run.id) : undefined;
      if (at !== undefined && (end?.reason !== 'shutdown' || end.counted !== true || job?.receipt !== undefined)) fail(['WORKER-3', 'RETRY-1'], `an attempt stopped by a shutdown with an attempt left ends its generation with end reason shutdown, counted true; got ${end === undefined ? 'no valid end.1.json' : `${end.reason}, counted ${end.counted}`}${job?.receipt === undefined ? '' : ` and a ${job.receipt.outcome} receipt`}`, evidence);
    }
    if (done.code !== 0 && !done.timedOut) fail(['WORKER-3'], 'after a shutdown on SIGTERM the consumer exits 0', evidence);
    if (groupLives(run.pgid)) killGroupNow(run.pgid);
    return { failures };
  } finally {
    run.consumer.kill();
    killGroupNow(groupLives(run.pgid) ? run.pgid : undefined);
  }
}

async function shutdownCase(ctx: CaseContext): Promise<void> {
  const flows: ShutdownFlow[] = [
    { label: 'ends-within-grace', endsAfterMs: 2000 },
    { label: 'outlives-grace', endsAfterMs: undefined },
  ];
  const results = await Promise.all(flows.map((flow) => shutdownFlow(ctx, flow)));
  for (const result of results) ctx.failures.push(...result.failures);
}

export const ownershipCases: ConformanceCase[] = [
  { name: 'ownership/superseded', clauses: ['CLAIM-7', 'OWN-1', 'LEASE-1', 'ID-1', 'ID-2', 'ID-3', 'ID-4', 'EXEC-3', 'WORKER-1'], level: 'consumer', strength: 'MUST', idle: true, run: supersededCase },
  { name: 'ownership/guardian', clauses: ['WORKER-2', 'RECOV-1', 'RETRY-2'], level: 'consumer', strength: 'MUST', heavy: true, run: guardianCase },
  { name: 'ownership/shutdown', clauses: ['WORKER-3'], level: 'consumer', strength: 'MUST', idle: true, run: shutdownCase },
];
