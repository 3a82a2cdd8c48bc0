/**
 * The cases of spec/lanes.md: lanes (LANE-1..LANE-4) and preemption
 * (PREEMPT-1, PREEMPT-2). Every overlap a case needs is forced, never hoped
 * for: the first job's command is a probe that runs until the case creates
 * its gate file, so the second consumer or the late job meets it running
 * every time. consumer/lane-held-no-claim (LANE-4): a held lane is checked
 * before claiming. A lane hold number reused under a taker is
 * hold-reuse.ts's (one machinery for lane and dedupe holds).
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CONTROL_LATENCY, PROTOCOL_VERSION } from '../../src/base/constants.ts';
import { ensurePrivateDir } from '../../src/fs/safefs.ts';
import { keyHash } from '../../src/model/layout.ts';
import { type HoldRecord, serializeRecord } from '../../src/records/codec.ts';
import { selfIdentity } from '../../src/model/identity.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { claimRecord, deadOwner, execRecord, ownerOf, receiptRecord, sleeper } from '../runner/fixtures.ts';
import { checkInvariants, listing } from '../runner/inspect.ts';
import { describeExit, type ProcessResult } from '../runner/process.ts';
import type { Failure } from '../runner/report.ts';
import { freshQueue, plantBytes, plantRecord, reopen, stageJob } from '../runner/stage.ts';
import { logged } from './jobs.ts';
import { bound, groupLives, killGroupNow, probe, readProbeLog, SCHEDULING_TOLERANCE_MS, spawnGroup, waitFor } from './probes.ts';
import { consumerExit, recordAt, startRunning } from './running-job.ts';
import { execWithGroup } from './recovery-and-gc.ts';
import { describeInjectedRun, needsInjector } from '../runner/pause.ts';

const LANE = 'the lane';

function laneDir(queue: string): string {
  return path.join(queue, 'lanes', createHash('sha256').update(LANE).digest('hex'));
}

/** Hold numbers of the lane, ascending. */
function holds(queue: string): number[] {
  const dir = laneDir(queue);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => /^[1-9][0-9]*\.json$/.test(n))
    .map((n) => Number(n.slice(0, -5)))
    .sort((a, b) => a - b);
}

/**
 * Two consumers and a lane: the first runs lane job A until the case lets it
 * end; meanwhile a second consumer drains the queue, where lane job B waits
 * before a free job F. B must not start while A runs (LANE-1); F runs. Then
 * A ends, and B runs after it; the lane's highest hold is never removed
 * (LANE-3).
 */
async function lanesCase(ctx: CaseContext): Promise<void> {
  const queue = await ctx.newQueue('lanes');
  const work = await ctx.subdir('lanes/work');
  const log = path.join(work, 'starts.log');
  const gate = path.join(work, 'gate');
  const run = await startRunning(ctx, queue, { argv: probe(log, 'lane-a', { gate }), cwd: work, lane: LANE }, 'lane-a', log);
  if (run === undefined) return;
  try {
    const idB = await ctx.produceOk(queue, { argv: logged(log, 'lane-b'), cwd: work, lane: LANE }, ['LANE-1']);
    const idF = await ctx.produceOk(queue, { argv: logged(log, 'free'), cwd: work }, ['LANE-1']);
    if (idB === undefined || idF === undefined) return;
    const second = await ctx.role('consume', { queue });
    const starts = countBy(await readStarts(log));
    const during = await ctx.snapshot(queue);
    const evidence = [describeExit(second), ...listing(during, new Set([run.id, idB]))];
    const overlapped = (starts.get('lane-b') ?? 0) > 0 || (during.jobs.get(idB)?.execs.length ?? 0) > 0;
    ctx.check(!overlapped, ['LANE-1', 'LANE-2', 'LANE-4'], `a second consumer started lane job B while lane job A (same lane) ran: at most one job of a lane runs at any instant`, evidence);
    ctx.check(starts.get('free') === 1, ['CLAIM-2', 'LANE-1'], `the second consumer must run the free job while the lane is held (it started ${starts.get('free') ?? 0} times)`, evidence);
    ctx.check(second.code === 0 && !second.timedOut, ['MANIFEST-1'], 'the second consume must exit 0 once nothing it can run remains (the lane job waits for the lane)', evidence);
    writeFileSync(gate, '');
    const first = await consumerExit(ctx, run.consumer, ['LANE-1']);
    // The first consumer may have left B for later: one more drain finishes it.
    const last = await ctx.role('consume', { queue });
    const snapshot = await ctx.snapshot(queue);
    const lines = (await readProbeLog(log)).lines;
    const after = [describeExit(first), describeExit(last), ...lines.map((l) => `log: ${l}`), ...listing(snapshot, new Set([run.id, idB]))];
    const doneA = lines.indexOf('done lane-a');
    const startB = lines.indexOf('start lane-b');
    if (!overlapped) ctx.check(startB > doneA && doneA >= 0, ['LANE-1', 'LANE-2'], 'lane job B must start only after lane job A ended', after);
    for (const [tag, id] of [['lane-a', run.id], ['lane-b', idB], ['free', idF]] as const) {
      const receipt = snapshot.jobs.get(id)?.receipt;
      ctx.check(receipt?.outcome === 'succeeded' && countBy(await readStarts(log)).get(tag) === 1, ['LANE-2', 'I3'], `${tag} must run once and succeed; receipt ${receipt?.outcome ?? 'none'}`, after);
    }
    // LANE-3: B took the lane last, so its hold is the highest and still there.
    const top = holds(queue).at(-1);
    const hold = top === undefined ? undefined : await recordAt(path.join(laneDir(queue), `${top}.json`), 'hold');
    ctx.check(hold?.job_id === idB, ['LANE-3'], `the lane's highest hold must stay (it is never removed); the highest hold now is ${top === undefined ? 'none' : `${top}.json naming ${hold?.job_id ?? 'an invalid record'}`}, but lane job B took the lane last`, after);
    for (const failure of await checkInvariants(snapshot, { accepted: [run.id, idB, idF] })) ctx.failures.push(failure);
  } finally {
    run.consumer.kill();
    if (groupLives(run.pgid)) killGroupNow(run.pgid);
  }
}

/**
 * The lane's highest hold belongs to an orphan whose execution still runs
 * (a dead owner's claim, its recorded group alive): the lane is held
 * (LANE-2: an exec whose group is not proven stopped). Lane job L comes
 * first in the order; it may start only once the consumer has met the
 * orphan later in the order and stopped its group (RECOV-1).
 */
async function laneHeldByOrphanCase(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('orphan-lane');
  const work = await ctx.subdir('orphan-lane/work');
  const log = path.join(work, 'starts.log');
  const queue = await reopen(root);
  const waiting = await stageJob(queue, { argv: logged(log, 'waiting'), cwd: work, lane: LANE });
  // Priority -1: after the waiting job in the order, so the consumer meets the held lane first.
  const orphan = await stageJob(queue, { argv: logged(log, 'orphan'), cwd: work, lane: LANE, max_attempts: 2, priority: -1 });
  const group = await spawnGroup(path.join(work, 'probes.log'), 'orphan-group', { onTerm: 'exit', scratch: work });
  try {
    const dead = await deadOwner();
    await plantRecord(queue, orphan.dir, 'claim.1.json', 'claim', claimRecord(orphan.id, 1, dead));
    await plantRecord(queue, orphan.dir, 'exec.1.json', 'exec', await execWithGroup(orphan.id, 1, group.pgid, group.start));
    const lane = laneDir(root);
    const { mkdir } = await import('node:fs/promises');
    await mkdir(lane, { mode: 0o700 });
    await plantRecord(queue, lane, '1.json', 'hold', { fsjob: '1.0', type: 'hold', kind: 'lane', key: LANE, job_id: orphan.id, gen: 1, owner: dead, created_ms: Date.now() });
    let startedWhileHeld = false;
    const consume = ctx.role('consume', { queue: root });
    let over = false;
    void consume.then(() => (over = true));
    await waitFor(async () => {
      const alive = groupLives(group.pgid);
      if ((await readStarts(log)).includes('waiting') && alive) startedWhileHeld = true;
      return over;
    }, 600_000, 20);
    const result: ProcessResult = await consume;
    const snapshot = await ctx.snapshot(root);
    const evidence = [describeExit(result), ...listing(snapshot, new Set([waiting.id, orphan.id]))];
    ctx.check(!startedWhileHeld, ['LANE-2', 'LANE-1'], `the lane's highest hold names a job whose recorded execution (group ${group.pgid}) still ran, so the lane was held; the waiting lane job started anyway`, evidence);
    const starts = countBy(await readStarts(log));
    const receipt = snapshot.jobs.get(waiting.id)?.receipt;
    ctx.check(receipt?.outcome === 'succeeded' && starts.get('waiting') === 1, ['LANE-2', 'RECOV-2'], `once the orphan's group is stopped the lane is free: the waiting job runs once (receipt ${receipt?.outcome ?? 'none'}, ${starts.get('waiting') ?? 0} starts)`, evidence);
    for (const failure of await checkInvariants(snapshot, { accepted: [waiting.id, orphan.id] })) ctx.failures.push(failure);
  } finally {
    group.kill();
  }
}

interface PreemptFlow {
  failures: Failure[];
}

/**
 * PREEMPT-1 and PREEMPT-2: a consumer runs preemptible job P of lane L; then
 * a non-preemptible job N of lane L arrives. P must get SIGTERM within
 * CONTROL_LATENCY and end `preempted` (counted false); N must start before
 * P starts again; P then runs again, its preempted run uncounted (RETRY-1).
 */
async function preemptRunning(ctx: CaseContext): Promise<PreemptFlow> {
  const failures: Failure[] = [];
  const fail = (clauses: string[], message: string, evidence: string[]): void => void failures.push({ clauses, message, evidence });
  const queue = await ctx.newQueue('preempt');
  const work = await ctx.subdir('preempt/work');
  const log = path.join(work, 'starts.log');
  const gate = path.join(work, 'gate');
  const p = await startRunning(ctx, queue, { argv: probe(log, 'p', { gate }), cwd: work, lane: 'lane L', preemptible: true, kill_grace_ms: 1000 }, 'p', log);
  if (p === undefined) return { failures };
  try {
    const idN = await ctx.produceOk(queue, { argv: logged(log, 'n'), cwd: work, lane: 'lane L' }, ['PREEMPT-1']);
    const arrived = Date.now();
    if (idN === undefined) return { failures };
    const evidence = async (): Promise<string[]> => [...(await readProbeLog(log)).lines.map((l) => `log: ${l}`), ...listing(await ctx.snapshot(queue), new Set([p.id, idN]))];
    const limit = CONTROL_LATENCY + SCHEDULING_TOLERANCE_MS;
    const termed = await waitFor(async () => (await readProbeLog(log)).terms('p').length > 0 || !groupLives(p.pgid), limit, 20);
    const term = (await readProbeLog(log)).terms('p')[0];
    if (!termed) {
      fail(['PREEMPT-1'], `a non-preemptible job of lane L waits, but preemptible job P of lane L still ran ${Date.now() - arrived} ms later without a SIGTERM: its owner checks at least every ${bound('CONTROL_LATENCY', CONTROL_LATENCY)} and stops it`, await evidence());
      return { failures };
    }
    if (term === undefined) fail(['PREEMPT-1'], 'preemptible job P was stopped without SIGTERM first: preemption sends SIGTERM, then SIGKILL after kill_grace_ms', await evidence());
    // N must start before P starts again (PREEMPT-2), then the gate lets P end.
    let order: string[] = [];
    await waitFor(async () => {
      order = (await readStarts(log)).filter((t) => t === 'p' || t === 'n');
      return order.includes('n') || order.length > 1;
    }, 30_000, 25);
    if (order[1] !== 'n') fail(['PREEMPT-2', 'CLAIM-2'], `after P's preemption the starts were ${order.join(', ')}: a consumer must not claim preemptible job P while non-preemptible job N of its lane waits`, await evidence());
    writeFileSync(gate, '');
    const done = await consumerExit(ctx, p.consumer, ['PREEMPT-1']);
    const last = await ctx.role('consume', { queue });
    const snapshot = await ctx.snapshot(queue);
    const after = [describeExit(done), describeExit(last), ...listing(snapshot, new Set([p.id, idN]))];
    const end = await recordAt(path.join(p.jobDir, 'end.1.json'), 'end', p.id);
    if (end?.reason !== 'preempted' || end.counted !== false) fail(['PREEMPT-1'], `P's preempted generation must end with end reason preempted, counted false; got ${end === undefined ? 'no valid end.1.json' : `${end.reason}, counted ${end.counted}`}`, after);
    const receipt = snapshot.jobs.get(p.id)?.receipt;
    if (receipt?.outcome !== 'succeeded' || receipt.attempts !== 1) fail(['RETRY-1', 'PREEMPT-2'], `a preempted run does not use an attempt: P (max_attempts 1) runs again and succeeds with attempts 1; got ${receipt === undefined ? 'no receipt' : `${receipt.outcome}, attempts ${receipt.attempts}`}`, after);
    failures.push(...(await checkInvariants(snapshot, { accepted: [p.id, idN] })));
    return { failures };
  } finally {
    p.consumer.kill();
    if (groupLives(p.pgid)) killGroupNow(p.pgid);
  }
}

/**
 * Only the waiting job's lane is preempted: preemptible job Q of lane M runs
 * on the only consumer while a non-preemptible job of lane L waits (nobody
 * can claim it) for longer than an owner may take to check. Q must run on.
 */
async function preemptOtherLane(ctx: CaseContext): Promise<PreemptFlow> {
  const failures: Failure[] = [];
  const queue = await ctx.newQueue('preempt-lane');
  const work = await ctx.subdir('preempt-lane/work');
  const log = path.join(work, 'starts.log');
  const gate = path.join(work, 'gate');
  const q = await startRunning(ctx, queue, { argv: probe(log, 'q', { gate }), cwd: work, lane: 'lane M', preemptible: true, kill_grace_ms: 1000 }, 'q', log);
  if (q === undefined) return { failures };
  try {
    const idN = await ctx.produceOk(queue, { argv: logged(log, 'n'), cwd: work, lane: 'lane L' }, ['PREEMPT-1']);
    if (idN === undefined) return { failures };
    const window = CONTROL_LATENCY + SCHEDULING_TOLERANCE_MS;
    const stopped = await waitFor(async () => (await readProbeLog(log)).terms('q').length > 0 || !groupLives(q.pgid), window, 50);
    if (stopped) failures.push({ clauses: ['PREEMPT-1'], message: `preemptible job Q of lane M was stopped while only a job of lane L waited: only a preemptible job of the waiting job's own lane is preempted (watched ${window} ms, CONTROL_LATENCY + tolerance)`, evidence: [...(await readProbeLog(log)).lines.map((l) => `log: ${l}`), ...listing(await ctx.snapshot(queue), new Set([q.id, idN]))] });
    writeFileSync(gate, '');
    await consumerExit(ctx, q.consumer, ['PREEMPT-1']);
    const snapshot = await ctx.snapshot(queue);
    failures.push(...(await checkInvariants(snapshot, { accepted: [q.id, idN], requireReceipts: true })));
    return { failures };
  } finally {
    q.consumer.kill();
    if (groupLives(q.pgid)) killGroupNow(q.pgid);
  }
}

/** PREEMPT-2 without a race: a preemptible job of higher priority waits beside a non-preemptible one of its lane. */
async function preemptOrder(ctx: CaseContext): Promise<PreemptFlow> {
  const queue = await ctx.newQueue('preempt-order');
  const work = await ctx.subdir('preempt-order/work');
  const log = path.join(work, 'starts.log');
  const ids: string[] = [];
  for (const [tag, priority, preemptible] of [['preemptible', 10, true], ['steady', 0, false]] as const) {
    const id = await ctx.produceOk(queue, { argv: logged(log, tag), cwd: work, lane: 'lane Z', priority, preemptible }, ['PREEMPT-2']);
    if (id !== undefined) ids.push(id);
  }
  const result = await ctx.role('consume', { queue });
  const snapshot = await ctx.snapshot(queue);
  const order = await readStarts(log);
  const failures: Failure[] = [];
  if (order[0] !== 'steady') failures.push({ clauses: ['PREEMPT-2', 'CLAIM-2'], message: `a preemptible job (priority 10) and a non-preemptible job (priority 0) of one lane wait: the preemptible one must not be claimed while the other waits; starts were ${order.join(', ')}`, evidence: [describeExit(result), ...listing(snapshot)] });
  failures.push(...(await checkInvariants(snapshot, { accepted: ids, requireReceipts: true })));
  return { failures };
}

async function preemptionCase(ctx: CaseContext): Promise<void> {
  const flows = await Promise.all([preemptRunning(ctx), preemptOtherLane(ctx), preemptOrder(ctx)]);
  for (const flow of flows) ctx.failures.push(...flow.failures);
}

async function laneHeldCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'lanes');
  const lane = 'held lane';
  const holder = await stageJob(f.queue, { argv: logged(f.log, 'holder'), cwd: f.work, lane });
  const waiter = await stageJob(f.queue, { argv: logged(f.log, 'waiter'), cwd: f.work, lane });
  const live = await sleeper();
  try {
    const owner = await ownerOf(live.pid, live.start);
    await plantRecord(f.queue, holder.dir, 'claim.1.json', 'claim', claimRecord(holder.id, 1, owner));
    await plantRecord(f.queue, holder.dir, 'exec.1.json', 'exec', execRecord(holder.id, 1, owner));
    const dir = path.join(f.root, 'lanes', keyHash(lane));
    await ensurePrivateDir(dir, f.queue.fsOptions);
    const hold: HoldRecord = { fsjob: PROTOCOL_VERSION, type: 'hold', kind: 'lane', key: lane, job_id: holder.id, gen: 1, owner, created_ms: Date.now() };
    await plantRecord(f.queue, dir, '1.json', 'hold', hold);
    const run = await ctx.role('consume', { queue: f.root });
    const snapshot = await ctx.snapshot(f.root);
    const seen = snapshot.jobs.get(waiter.id);
    const evidence = [describeExit(run), ...listing(snapshot, new Set([holder.id, waiter.id]))];
    ctx.check((seen?.claims.length ?? 0) === 0, ['LANE-4', 'LANE-2'], `a job whose lane is held by a live owner must not be claimed (the check comes before the claim, so no generation is spent on lane_busy); it has claims ${seen?.claims.join(',')}`, evidence);
    ctx.check(!run.timedOut, ['MANIFEST-4'], 'consume must finish when the only runnable job waits behind a lane another live owner holds', evidence);
  } finally {
    await live.stop();
  }
}

/** How many links into a lane's directory the injector refuses in consumer/lane-link-bound: more than LANE-2's 100. */
const LOST_LINKS = 150;

/**
 * consumer/lane-link-bound (LANE-2): every link of a hold into the lane's
 * directory loses its race for the first LOST_LINKS tries of the run: the
 * injector links a rival's hold at the name first (a hold of a finished
 * job, so never held) and the link fails with EEXIST. LANE-2 lists again
 * after a failed link at most 100 times; then the lane counts as busy and
 * the generation ends with a lane_busy end record (CLAIM-6 step 8),
 * uncounted. So generation 1 ends lane_busy, and a later generation (in
 * that run, or in a consume run after it) takes the lane and runs the job
 * once. An owner that lists and links without
 * bound stays in generation 1 for all of them.
 */
async function laneLinkBoundCase(ctx: CaseContext): Promise<void> {
  await needsInjector(ctx, 'to make the lane\'s links fail');
  const f = await freshQueue(ctx, 'contended');
  const job = await stageJob(f.queue, { argv: logged(f.log, 'laned'), cwd: f.work, lane: LANE });
  // The rival: each lost link finds its hold at the name, a hold of a finished job (so not held, LANE-2).
  const finished = await stageJob(f.queue, { argv: logged(f.log, 'rival'), cwd: f.work });
  const self = await selfIdentity();
  await plantRecord(f.queue, finished.dir, 'receipt.json', 'receipt', receiptRecord(finished.id, 1, self));
  const rival = path.join(f.work, 'rival-hold.json');
  const hold: HoldRecord = { fsjob: PROTOCOL_VERSION, type: 'hold', kind: 'lane', key: LANE, job_id: finished.id, gen: 1, owner: self, created_ms: Date.now() };
  await plantBytes(rival, serializeRecord(hold));
  const result = await ctx.roleFaulted('consume', { queue: f.root }, { op: 'link', path: 'lanes/*/*', errno: 'EEXIST', upTo: LOST_LINKS, plant: rival });
  // The races are over: a consume without the injector finishes the job if the first left it.
  const again = await ctx.role('consume', { queue: f.root });
  const snapshot = await ctx.snapshot(f.root);
  const seen = snapshot.jobs.get(job.id);
  const end = await recordAt(path.join(job.dir, 'end.1.json'), 'end', job.id);
  const starts = countBy(await readStarts(f.log)).get('laned') ?? 0;
  const evidence = [describeInjectedRun(result), describeExit(again), `end.1.json: ${end === undefined ? 'none' : `${end.reason}, counted ${end.counted}`}`, ...listing(snapshot, new Set([job.id]))];
  ctx.check(
    end?.reason === 'lane_busy' && end.counted === false,
    ['LANE-2', 'CLAIM-6'],
    `the first ${LOST_LINKS} links of a lane hold fail with EEXIST: LANE-2 lists again at most 100 times, then the lane is busy and generation 1 ends with a lane_busy end record, counted false; got ${end === undefined ? 'no end.1.json' : `end.1.json ${end.reason}, counted ${end.counted}`}`,
    evidence,
  );
  ctx.check(starts === 1 && seen?.receipt?.outcome === 'succeeded', ['LANE-2', 'LANE-4'], `once the links succeed again a later generation takes the lane and runs the job once; ${starts} starts, receipt ${seen?.receipt?.outcome ?? 'none'}`, evidence);
}

export const lanesCases: ConformanceCase[] = [
  { name: 'consumer/lanes', clauses: ['LANE-1', 'LANE-2', 'LANE-3', 'LANE-4', 'CLAIM-2'], level: 'consumer', strength: 'MUST', features: ['lanes'], run: lanesCase },
  { name: 'scheduling/lane-held-by-orphan', clauses: ['LANE-2', 'LANE-1', 'RECOV-2'], level: 'consumer', strength: 'MUST', features: ['lanes'], run: laneHeldByOrphanCase },
  { name: 'scheduling/preemption', clauses: ['PREEMPT-1', 'PREEMPT-2', 'RETRY-1', 'CLAIM-2'], level: 'consumer', strength: 'MUST', features: ['lanes', 'preemption'], heavy: true, run: preemptionCase },
  { name: 'consumer/lane-held-no-claim', clauses: ['LANE-4', 'LANE-2', 'MANIFEST-4'], level: 'consumer', strength: 'MUST', features: ['lanes'], run: laneHeldCase },
  { name: 'consumer/lane-link-bound', clauses: ['LANE-2', 'CLAIM-6', 'LANE-4'], level: 'consumer', strength: 'MUST', features: ['lanes'], run: laneLinkBoundCase },
];
