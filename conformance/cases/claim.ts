/**
 * The cases of spec/claim.md: choosing a job and claiming it.
 *
 * - consumer/concurrency (CLAIM-5, I2, I3): four consumers race over 200
 *   jobs; every job is claimed and run by exactly one;
 * - consumer/unclaimed-features (CLAIM-11): a consumer never claims a job
 *   that needs a feature it does not claim;
 * - consumer/gen-max (CLAIM-9): generation GEN_MAX never runs the job;
 * - scheduling/priority-arrival (CLAIM-2): a job of higher priority that
 *   arrives while another waits runs first, so the consumer chooses again
 *   from the top after each job;
 * - ownership/superseded (CLAIM-7, OWN-1): while the job runs, the owner's
 *   identity is checked against /proc (ID-1..ID-4, EXEC-3), its first
 *   renewal is awaited (LEASE-1: by claimed_ms + lease_ms / 3), and, when it
 *   names a worker, its registration (WORKER-1); then the runner publishes
 *   claim.2.json for a live owner of its own: the first owner must stop its
 *   execution at once (SIGKILL) and publish nothing more for the job.
 *
 * Lanes are lanes.ts's; the forced interleavings of a claim are races.ts's.
 */
import { readdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { existsSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { CONTROL_LATENCY, GEN_MAX, PROTOCOL_VERSION, renewInterval } from '../../src/base/constants.ts';
import { selfIdentity } from '../../src/model/identity.ts';
import type { EndRecord } from '../../src/records/codec.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { checkInvariants, listing } from '../runner/inspect.ts';
import { describeExit, type ProcessResult, roleEnv } from '../runner/process.ts';
import { roleArgv } from '../runner/manifest.ts';
import { auditCalls } from '../runner/audit.ts';
import { runWithCrash, type CrashRunResult } from '../crash/run.ts';
import { interposerPath } from '../crash/interposer.ts';
import { freshQueue, plantRecord, reopen, type Staged, stageJob } from '../runner/stage.ts';
import { claimRecord, deadOwner, execRecord, ownerOf, sleeper } from '../runner/fixtures.ts';
import { logged } from './jobs.ts';
import { bound, groupLives, killGroupNow, probe, procStat, readProbeLog, SCHEDULING_TOLERANCE_MS, waitFor } from './probes.ts';
import { consumerExit, recordAt, type Running, startRunning } from './running-job.ts';

const RACE_JOBS = 200;
const RACERS = 4;

async function concurrencyCase(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('race');
  const queue = await reopen(root);
  const work = await ctx.subdir('race/work');
  const log = path.join(work, 'starts.log');
  const ids: string[] = [];
  // Staged by the runner: the case is about consumers racing, and 200 produce runs would dominate it.
  for (let i = 0; i < RACE_JOBS; i++) {
    const staged = await stageJob(queue, { argv: logged(log, `job-${i}`), cwd: work });
    ids.push(staged.id);
  }
  const timeoutMs = Math.max(ctx.impl.timeoutMs, 300_000);
  // Each racer runs under the crash injector in count mode: nothing is killed,
  // but every mutating call is logged, so how claims were taken can be audited.
  // Without a C compiler the race still runs, unaudited.
  const audited = await interposerPath().then(
    () => true,
    () => false,
  );
  if (!audited) ctx.note('no C compiler for the crash injector: claims were not audited');
  const env = roleEnv(ctx.impl, { [ctx.marker.name]: ctx.marker.value });
  const argv = roleArgv(ctx.impl, 'consume', { queue: root });
  // Traced: a claim lost to a rival is a link that failed (EEXIST), which published nothing the audit could ask to be fsynced.
  const race = (): Promise<{ exitCode: number | null; signal: string | null; timedOut: boolean; stderr: string; calls: CrashRunResult['calls']; trace?: CrashRunResult['trace'] }> =>
    audited ? runWithCrash({ argv, cwd: ctx.impl.dir, env, root, timeoutMs, trace: true }) : ctx.role('consume', { queue: root }, { timeoutMs }).then((r) => ({ exitCode: r.code, signal: r.signal, timedOut: r.timedOut, stderr: r.stderr, calls: [] }));
  const runs = await Promise.all(Array.from({ length: RACERS }, race));
  const snapshot = await ctx.snapshot(root);
  const describe = (run: { exitCode: number | null; signal: string | null; timedOut: boolean; stderr: string }): string =>
    `consume: ${run.timedOut ? `killed after its time limit (${timeoutMs} ms)` : `exit ${run.exitCode}${run.signal === null ? '' : ` signal ${run.signal}`}`}; stderr: ${run.stderr.trim().split('\n').slice(-2).join(' | ').slice(0, 300)}`;
  for (const run of runs) ctx.check(run.exitCode === 0 && !run.timedOut, ['MANIFEST-1', 'MANIFEST-2'], 'every racing consume must exit 0', [describe(run)]);
  const real = await realpath(root);
  for (const [index, run] of runs.entries()) {
    for (const finding of auditCalls(run.calls, real, `racer ${index + 1}`, run.trace)) ctx.failures.push(finding);
  }
  const counts = countBy(await readStarts(log));
  const twice: string[] = [];
  const never: string[] = [];
  for (let i = 0; i < RACE_JOBS; i++) {
    const n = counts.get(`job-${i}`) ?? 0;
    if (n > 1) twice.push(`job-${i} (${ids[i]}) x${n}`);
    if (n === 0) never.push(`job-${i} (${ids[i]})`);
  }
  ctx.check(twice.length === 0, ['CLAIM-5', 'I2', 'RETRY-2'], `${twice.length} of ${RACE_JOBS} max_attempts-1 jobs started more than once under ${RACERS} racing consumers: ${twice.slice(0, 5).join(', ')}`, () => twice.slice(0, 3).flatMap((t) => listing(snapshot, new Set([t.split('(')[1]?.split(')')[0] ?? '']))));
  ctx.check(never.length === 0, ['I3', 'CLAIM-1'], `${never.length} jobs never started: ${never.slice(0, 5).join(', ')}`);
  const unfinished = ids.filter((id) => snapshot.jobs.get(id)?.receipt?.outcome !== 'succeeded');
  ctx.check(unfinished.length === 0, ['I3', 'RCPT-3'], `${unfinished.length} jobs have no succeeded receipt: ${unfinished.slice(0, 5).join(', ')}`, () => listing(snapshot, new Set(unfinished.slice(0, 3))));
  for (const failure of await checkInvariants(snapshot, { accepted: ids, requireReceipts: true })) ctx.failures.push(failure);
  ctx.note(`${RACE_JOBS} jobs, ${RACERS} consumers, ${runs.reduce((n, r) => n + r.calls.length, 0)} calls audited`);
}

async function unclaimedFeaturesCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'unclaimed');
  const claimed = ctx.impl.profile.features;
  const jobs: { feature: string; job: Staged }[] = [];
  if (!claimed.has('payload')) jobs.push({ feature: 'payload', job: await stageJob(f.queue, { handler: 'conformance.h', payload: { n: 1 }, cwd: f.work }) });
  if (!claimed.has('lanes')) jobs.push({ feature: 'lanes', job: await stageJob(f.queue, { argv: logged(f.log, 'lane'), cwd: f.work, lane: 'a lane' }) });
  if (!claimed.has('preemption') && claimed.has('lanes')) {
    jobs.push({ feature: 'preemption', job: await stageJob(f.queue, { argv: logged(f.log, 'preemptible'), cwd: f.work, lane: 'p lane', preemptible: true }) });
  }
  const plain = await stageJob(f.queue, { argv: logged(f.log, 'plain'), cwd: f.work });
  const run = await ctx.consumeOk(f.root, ['CLAIM-11']);
  const snapshot = await ctx.snapshot(f.root);
  const evidence = [describeExit(run), ...listing(snapshot, new Set([plain.id, ...jobs.map((j) => j.job.id)]))];
  for (const { feature, job } of jobs) {
    const seen = snapshot.jobs.get(job.id);
    ctx.check((seen?.claims.length ?? 0) === 0, ['CLAIM-11', 'MANIFEST-3'], `${ctx.impl.name} does not claim the ${feature} feature, so it must never claim a job that needs it (leave it for another consumer); it has claims ${seen?.claims.join(',')}`, evidence);
  }
  ctx.check(snapshot.jobs.get(plain.id)?.receipt?.outcome === 'succeeded', ['CLAIM-2', 'CLAIM-11'], 'the plain job must still run', evidence);
}

async function genMaxCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'genmax');
  const job = await stageJob(f.queue, { argv: logged(f.log, 'victim'), cwd: f.work });
  // Generation GEN_MAX-1 ended without an execution (a lane race or a release,
  // counted false). Only the highest generation decides what comes next
  // (STATUS-1, CLAIM-4), so the 9998 below it are not planted: they would cost
  // 20,000 files and tell the consumer nothing more.
  const self = await selfIdentity();
  const now = Date.now();
  const top = GEN_MAX - 1;
  await plantRecord(f.queue, job.dir, `claim.${top}.json`, 'claim', claimRecord(job.id, top, self, now - 60_000));
  const end: EndRecord = { fsjob: PROTOCOL_VERSION, type: 'end', job_id: job.id, gen: top, reason: 'released', counted: false, retry_at_ms: now - 60_000, status: null, ended_ms: now - 60_000 };
  await plantRecord(f.queue, job.dir, `end.${top}.json`, 'end', end);
  // RECOV-4: a second job whose claim GEN_MAX is open, its owner dead (it died before its receipt).
  const orphan = await stageJob(f.queue, { argv: logged(f.log, 'orphan'), cwd: f.work });
  await plantRecord(f.queue, orphan.dir, `claim.${GEN_MAX}.json`, 'claim', claimRecord(orphan.id, GEN_MAX, await deadOwner(), now - 60_000));
  // RECOV-4 after RECOV-1 step 1: a third job whose dead owner of claim
  // GEN_MAX recorded an execution anyway (CLAIM-9 forbids it), still
  // running: it is stopped before the receipt, never left behind one.
  const recorded = await stageJob(f.queue, { argv: logged(f.log, 'recorded'), cwd: f.work });
  await plantRecord(f.queue, recorded.dir, `claim.${GEN_MAX}.json`, 'claim', claimRecord(recorded.id, GEN_MAX, await deadOwner(), now - 60_000));
  const running = await sleeper();
  await plantRecord(f.queue, recorded.dir, `exec.${GEN_MAX}.json`, 'exec', execRecord(recorded.id, GEN_MAX, await ownerOf(running.pid, running.start)));
  let run: ProcessResult;
  let left: boolean;
  try {
    run = await ctx.consumeOk(f.root, ['CLAIM-9']);
  } finally {
    left = groupLives(running.pid);
    await running.stop();
  }
  const snapshot = await ctx.snapshot(f.root);
  // CLAIM-4 first: a claim numbered past GEN_MAX is the cause; whatever the
  // receipts say after it is a consequence.
  const past: string[] = [];
  for (const staged of [job, orphan]) {
    for (const name of await readdir(staged.dir).catch(() => [] as string[])) {
      const n = /^claim\.([0-9]+)\.json$/.exec(name)?.[1];
      if (n !== undefined && Number(n) > GEN_MAX) past.push(`jobs/${staged.id}/${name}`);
    }
  }
  if (!ctx.check(past.length === 0, ['CLAIM-4'], `no claim may be created past GEN_MAX (${GEN_MAX}), neither for a job whose generation ${GEN_MAX - 1} ended nor for one whose claim ${GEN_MAX} has a dead owner; found ${past.join(' ')}`, [describeExit(run), ...listing(snapshot)])) return;
  const seen = snapshot.jobs.get(job.id);
  const starts = countBy(await readStarts(f.log));
  const receipt = seen?.receipt;
  const evidence = [describeExit(run), `claims up to ${seen?.claims.at(-1) ?? 0}, executions ${seen?.execs.join(',') || 'none'}`, `receipt ${JSON.stringify(receipt && { gen: receipt.gen, outcome: receipt.outcome, reason: receipt.reason, exit_code: receipt.exit_code })}`];
  ctx.check(
    (starts.get('victim') ?? 0) === 0 && !(seen?.execs.includes(GEN_MAX) ?? false) && receipt?.outcome === 'lost' && receipt.reason === 'claim_limit' && receipt.gen === GEN_MAX,
    ['CLAIM-9', 'CLAIM-4'],
    `generation GEN_MAX (${GEN_MAX}) must never run the job: its owner publishes a lost receipt with reason claim_limit; ${starts.get('victim') ?? 0} starts`,
    evidence,
  );
  const finished = snapshot.jobs.get(orphan.id)?.receipt;
  ctx.check(
    (starts.get('orphan') ?? 0) === 0 && finished?.outcome === 'lost' && finished.reason === 'claim_limit' && finished.gen === GEN_MAX,
    ['RECOV-4', 'CLAIM-4', 'RECOV-3'],
    `a job whose claim GEN_MAX is open with a dead owner is finished by the recoverer without a claim: lost, claim_limit, gen ${GEN_MAX}; got ${JSON.stringify(finished && { gen: finished.gen, outcome: finished.outcome, reason: finished.reason })}`,
    [describeExit(run), ...listing(snapshot, new Set([orphan.id]))],
  );
  const after = snapshot.jobs.get(recorded.id)?.receipt;
  ctx.check(
    !left,
    ['RECOV-4', 'RECOV-1', 'I4'],
    `exec.${GEN_MAX}.json records a group (pgid ${running.pid}) that still ran when its owner of claim GEN_MAX was found dead: RECOV-1 step 1 stops it before the claim_limit receipt; after consume it ${left ? 'still ran' : 'was stopped'}, receipt ${after === undefined ? 'none' : `${after.outcome} (${after.reason})`}`,
    [describeExit(run), ...listing(snapshot, new Set([recorded.id]))],
  );
  ctx.check(
    after?.outcome === 'lost' && after.reason === 'claim_limit' && after.gen === GEN_MAX,
    ['RECOV-4', 'CLAIM-4'],
    `once the recorded execution of claim GEN_MAX is stopped, the recoverer publishes lost, claim_limit, gen ${GEN_MAX}; got ${JSON.stringify(after && { gen: after.gen, outcome: after.outcome, reason: after.reason })}`,
    [describeExit(run), ...listing(snapshot, new Set([recorded.id]))],
  );
}

/**
 * CLAIM-2 with a job that arrives late: while A runs, C waits; then B of
 * higher priority is enqueued. Once A ends, B must start before C: a
 * consumer chooses again from the top after each job, never from an old
 * listing.
 */
async function priorityArrivalCase(ctx: CaseContext): Promise<void> {
  const queue = await ctx.newQueue('arrival');
  const work = await ctx.subdir('arrival/work');
  const log = path.join(work, 'starts.log');
  const gate = path.join(work, 'gate');
  const idC = await ctx.produceOk(queue, { argv: logged(log, 'c'), cwd: work }, ['CLAIM-2']);
  const run = await startRunning(ctx, queue, { argv: probe(log, 'a', { gate }), cwd: work, priority: 1 }, 'a', log);
  if (run === undefined || idC === undefined) return;
  try {
    const idB = await ctx.produceOk(queue, { argv: logged(log, 'b'), cwd: work, priority: 10 }, ['CLAIM-2']);
    writeFileSync(gate, '');
    const done = await consumerExit(ctx, run.consumer, ['CLAIM-2']);
    const snapshot = await ctx.snapshot(queue);
    const order = await readStarts(log);
    ctx.check(JSON.stringify(order) === JSON.stringify(['a', 'b', 'c']), ['CLAIM-2', 'CLAIM-1'], `B (priority 10) arrived while A ran and C (priority 0) waited: after A, B must start before C; starts were ${order.join(', ')}`, [describeExit(done), ...listing(snapshot)]);
    for (const failure of await checkInvariants(snapshot, { accepted: [run.id, idC, ...(idB === undefined ? [] : [idB])], requireReceipts: true })) ctx.failures.push(failure);
  } finally {
    run.consumer.kill();
    if (groupLives(run.pgid)) killGroupNow(run.pgid);
  }
}

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

export const claimCases: ConformanceCase[] = [
  { name: 'consumer/concurrency', clauses: ['CLAIM-5', 'I2', 'I3'], level: 'consumer', strength: 'MUST', heavy: true, run: concurrencyCase },
  { name: 'consumer/unclaimed-features', clauses: ['CLAIM-11', 'MANIFEST-3', 'CLAIM-2'], level: 'consumer', strength: 'MUST', unclaimed: ['payload', 'lanes', 'preemption'], run: unclaimedFeaturesCase },
  { name: 'consumer/gen-max', clauses: ['CLAIM-9', 'CLAIM-4', 'RECOV-4', 'RECOV-3', 'RECOV-1', 'I4'], level: 'consumer', strength: 'MUST', run: genMaxCase },
  { name: 'scheduling/priority-arrival', clauses: ['CLAIM-2', 'CLAIM-1'], level: 'consumer', strength: 'MUST', run: priorityArrivalCase },
  { name: 'ownership/superseded', clauses: ['CLAIM-7', 'OWN-1', 'LEASE-1', 'ID-1', 'ID-2', 'ID-3', 'ID-4', 'EXEC-3', 'WORKER-1'], level: 'consumer', strength: 'MUST', idle: true, run: supersededCase },
];
