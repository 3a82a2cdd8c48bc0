/**
 * The cases of spec/workers.md. ownership/shutdown (WORKER-3): SIGTERM to
 * the consumer while its command runs (a probe, probes.ts, that ignores
 * SIGTERM where only SIGKILL may stop it; the runner watches its process
 * group in /proc): it claims nothing more, lets a running attempt that ends
 * within CANCEL_GRACE finish, stops one that does not after CANCEL_GRACE and
 * ends its generation `shutdown`, then exits 0. consumer/root-replaced
 * (WORKER-4): the queue root moves away under a long-running consumer.
 */
import { writeFileSync } from 'node:fs';
import { readdir, rename } from 'node:fs/promises';
import path from 'node:path';
import { CANCEL_GRACE } from '../../src/base/constants.ts';
import type { CaseContext, ConformanceCase } from '../runner/case.ts';
import { listing } from '../runner/inspect.ts';
import { describeExit, type ProcessResult, sleep } from '../runner/process.ts';
import { createQueue } from '../runner/stage.ts';
import { logged } from './jobs.ts';
import { consumerExit, recordAt, startRunning } from './running-job.ts';
import { groupLives, killGroupNow, probe, readProbeLog, SCHEDULING_TOLERANCE_MS, waitFor } from './probes.ts';

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

/** How long consumer/root-replaced waits for consume to notice: WORKER-4 states no bound; RENEW_INTERVAL of LEASE_DEFAULT is when a registration is renewed. */
const NOTICE_MS = 60_000;

/**
 * consumer/root-replaced (WORKER-4): while a long-running consumer (one that
 * registers) runs a job, its queue root is moved away and another queue is
 * created at that path. The consumer stops serving it: it exits non-zero
 * naming the queue, has stopped the execution it started there, and has
 * created nothing in the new queue (no claim, no registration, no record),
 * not even for a while: the case lists it every 100 ms until consume exits.
 */
async function rootReplacedCase(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('replaced');
  const work = await ctx.subdir('replaced/work');
  const log = path.join(work, 'probe.log');
  const run = await startRunning(ctx, root, { argv: probe(log, 'victim', { gate: path.join(work, 'gate') }), cwd: work, timeout_ms: 300_000, kill_grace_ms: 1000 }, 'victim', log);
  if (run === undefined) return;
  try {
    await rename(root, `${root}.moved`);
    await createQueue(root);
    const fresh = await treeOf(root);
    // What appears in the new queue while the consumer runs, also what it removes again before it exits.
    const seen = new Set<string>();
    let exited: ProcessResult | undefined;
    void run.consumer.done.then((result) => (exited = result));
    const until = Date.now() + NOTICE_MS;
    while (exited === undefined && Date.now() < until) {
      for (const entry of await treeOf(root)) seen.add(entry);
      await sleep(100);
    }
    const done = exited;
    const stillRuns = groupLives(run.pgid);
    for (const entry of await treeOf(root)) seen.add(entry);
    const after = [...seen].sort();
    const evidence = [done === undefined ? `consume still ran ${NOTICE_MS} ms after its root was replaced` : describeExit(done), `the new queue meanwhile: ${after.join(' ')}`];
    ctx.check(
      done !== undefined && done.code !== 0 && done.code !== null && `${done.stderr}${done.stdout}`.includes(root),
      ['WORKER-4'],
      `the queue root a consumer serves was moved away and another queue created at ${root}: the consumer stops serving it and exits with a failure status and a message naming the queue; ${done === undefined ? `it still ran after ${NOTICE_MS / 1000} s` : describeExit(done)}`,
      evidence,
    );
    ctx.check(!stillRuns, ['WORKER-4'], `the execution the consumer started in the lost queue (group ${run.pgid}) is stopped when it stops serving it; it still ran`, evidence);
    const added = after.filter((entry) => !fresh.includes(entry));
    ctx.check(added.length === 0, ['WORKER-4', 'LAYOUT-2'], `nothing of the lost queue's consumer may be created in the queue now at its root, not even for a while; seen there: ${added.join(' ')}`, evidence);
  } finally {
    run.consumer.kill();
    await run.consumer.done;
    killGroupNow(groupLives(run.pgid) ? run.pgid : undefined);
  }
}

/** Every path under `root`, relative, sorted. */
async function treeOf(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true }).catch(() => [] as string[]);
  return entries.map(String).sort();
}

export const workersCases: ConformanceCase[] = [
  { name: 'ownership/shutdown', clauses: ['WORKER-3'], level: 'consumer', strength: 'MUST', idle: true, run: shutdownCase },
  { name: 'consumer/root-replaced', clauses: ['WORKER-4', 'LAYOUT-2'], level: 'consumer', strength: 'MUST', features: ['workers'], idle: true, run: rootReplacedCase },
];
